package units

import (
	"strconv"
	"strings"
)

// intListFull is how many numbers IntList lists one by one; a longer
// list is shortened.
const intListFull = 16

// IntList is "0, 1, 2": the numbers in their order. A list of more than 16
// is shortened so that its length does not grow with the list's: runs of
// three or more consecutive numbers become "a-b" ("0-99999"), and past the
// first 8 items the rest are left out and counted:
// "1, 3, 5, 7, 9, 11, 13, 15, ..., 99 (50 in all)".
func IntList(ns []int) string {
	if len(ns) <= intListFull {
		s := make([]string, len(ns))
		for i, n := range ns {
			s[i] = strconv.Itoa(n)
		}
		return strings.Join(s, ", ")
	}
	var items []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		switch {
		case j-i >= 2:
			items = append(items, strconv.Itoa(ns[i])+"-"+strconv.Itoa(ns[j]))
		case j > i:
			items = append(items, strconv.Itoa(ns[i]), strconv.Itoa(ns[j]))
		default:
			items = append(items, strconv.Itoa(ns[i]))
		}
		i = j + 1
	}
	if len(items) <= 8 {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:8], ", ") + ", ..., " + strconv.Itoa(ns[len(ns)-1]) + " (" + Int(len(ns)) + " in all)"
}
