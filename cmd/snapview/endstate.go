package main

import (
	"fmt"
	"io"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/report/kit"
)

// warnEndState warns that the replay of devs ends in a state other than
// the file's segments (replay.Result.Check not Equal), so the figures drawn from
// it may be off: "warning: FILE: device 3: the replayed end state differs
// from the file's segments; figures may be off". file is left out when
// empty; more than one device are listed (at most 8, then "…"). effect
// says what may be off ("figures", "the state"); differences, when given,
// follow on lines of their own, escaped.
func warnEndState(w io.Writer, file string, devs []int, effect string, differences []string) {
	if len(devs) == 0 {
		return
	}
	prefix := "warning: "
	if file != "" {
		prefix += file + ": "
	}
	if len(devs) == 1 {
		prefix += fmt.Sprintf("device %d: ", devs[0])
	} else {
		list := joinInts(devs[:min(len(devs), 8)])
		if len(devs) > 8 {
			list += ", …"
		}
		prefix += fmt.Sprintf("%d devices (%s): ", len(devs), list)
	}
	colon := ""
	if len(differences) > 0 {
		colon = ":"
	}
	fmt.Fprintf(w, "%s%s; %s may be off%s\n", prefix, replay.EndStateDiffers, effect, colon)
	for _, d := range differences {
		fmt.Fprintf(w, "warning:   %s\n", kit.Escape(d))
	}
}
