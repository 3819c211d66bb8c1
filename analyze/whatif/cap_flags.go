package whatif

import (
	"fmt"
	"os"
	"strings"

	"github.com/snapview/snapview/internal/units"
)

// ParseCap reads the cap a process ran under as the --limit and
// --oom-message flags of whatif, explain and forecast give it: limit is
// BYTES or a size with a unit ("4656MiB", "4.5GiB"; "" when not given),
// oom torch's OutOfMemoryError message as TEXT or @FILE ("" when not
// given). It returns the cap in bytes (0 when not given) and the parsed
// message (nil when not given). Errors name the flag; giving both is one,
// since each sets the cap. All its errors are mistakes in the command
// line (usage errors).
func ParseCap(limit, oom string) (int64, *OOMMessage, error) {
	var n int64
	if limit != "" {
		var err error
		if n, err = units.ParseBytes(limit); err != nil {
			return 0, nil, fmt.Errorf("--limit %q: %v", limit, err)
		}
		if n <= 0 {
			return 0, nil, fmt.Errorf("--limit %q: want a positive byte count", limit)
		}
	}
	if oom == "" {
		return n, nil, nil
	}
	text := oom
	if name, ok := strings.CutPrefix(text, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return 0, nil, fmt.Errorf("--oom-message: %v", err)
		}
		text = string(b)
	}
	msg, err := ParseOOMMessage(text)
	if err != nil {
		return 0, nil, fmt.Errorf("--oom-message: %v", err)
	}
	if n > 0 {
		return 0, nil, fmt.Errorf("--oom-message and --limit both set the cap: give one")
	}
	return n, msg, nil
}
