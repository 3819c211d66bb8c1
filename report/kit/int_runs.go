package kit

import (
	"strconv"
	"strings"
)

// maxRunParts is the most items JoinIntRuns writes before it counts the
// rest.
const maxRunParts = 32

// JoinIntRuns joins sorted ints as joinInts does, but writes a run of
// three or more consecutive ints as "first-last" and at most maxRunParts
// items, then how many ints are left out: "1-1999" for 1999 idle devices,
// where joinInts writes them all. Its output is bounded whatever len(ns).
func JoinIntRuns(ns []int) string {
	var b strings.Builder
	parts := 0
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j-i < 2 {
			j = i
		}
		if parts == maxRunParts {
			b.WriteString(", … (" + strconv.Itoa(len(ns)-i) + " more)")
			break
		}
		if parts > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(ns[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(ns[j]))
		}
		parts++
		i = j + 1
	}
	return b.String()
}
