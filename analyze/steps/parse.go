package steps

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseMoment parses a moment as the --at flags give it: peak, end, oom,
// oom:K (K from 1), entry:N (N from -1), step:K (K from 0) or step:last,
// time:T (T a duration from the first entry, or a time_us value in
// microseconds). Resolving it to a trace entry is Moment.Resolve's job.
// An error starts with s (quoted when s is no known kind) and says what
// is wanted, so that a caller can put the flag's name before it.
func ParseMoment(s string) (Moment, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	switch {
	case name == "peak" && !hasArg:
		return Moment{Kind: MomentPeak}, nil
	case name == "end" && !hasArg:
		return Moment{Kind: MomentEnd}, nil
	case name == "oom" && !hasArg:
		return Moment{Kind: MomentOOM}, nil
	case name == "oom":
		k, err := strconv.Atoi(arg)
		if err != nil || k < 1 {
			return Moment{}, fmt.Errorf("%s: want oom:K with K = 1, 2, ...", s)
		}
		return Moment{Kind: MomentOOM, N: k}, nil
	case name == "entry" && hasArg:
		n, err := strconv.Atoi(arg)
		if err != nil || n < -1 {
			return Moment{}, fmt.Errorf("%s: want entry:N with N = -1, 0, 1, ...", s)
		}
		return Moment{Kind: MomentEntry, N: n}, nil
	case name == "step" && hasArg:
		if arg == "last" {
			return Moment{Kind: MomentStep, N: -1}, nil
		}
		k, err := strconv.Atoi(arg)
		if err != nil || k < 0 {
			return Moment{}, fmt.Errorf("%s: want step:K with K = 0, 1, ... or step:last", s)
		}
		return Moment{Kind: MomentStep, N: k}, nil
	case name == "time" && hasArg:
		if us, err := strconv.ParseInt(arg, 10, 64); err == nil && us >= 0 {
			return Moment{Kind: MomentTime, US: us, Abs: true}, nil
		}
		d, err := time.ParseDuration(arg)
		if err != nil || d < 0 {
			return Moment{}, fmt.Errorf("%s: want time:T with T a duration (1.5s, 250ms) or a time_us value", s)
		}
		return Moment{Kind: MomentTime, Dur: d}, nil
	}
	return Moment{}, fmt.Errorf("%q: want peak, oom, oom:K, end, entry:N, time:T or step:K", s)
}
