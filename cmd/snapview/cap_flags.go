package main

import (
	"os"
	"strings"

	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/units"
)

// parseCapFlags reads the --limit and --oom-message flags whatif and
// explain share: the cap in bytes (0 when not given) and torch's OOM
// message, from TEXT or @FILE (nil when not given). Errors are usage
// errors naming the flag; giving both is one, since each sets the cap.
func parseCapFlags(limitFlag, oomFlag string) (int64, *whatif.OOMMessage, error) {
	var limit int64
	if limitFlag != "" {
		var err error
		if limit, err = units.ParseBytes(limitFlag); err != nil {
			return 0, nil, usageErrorf("--limit %q: %v", limitFlag, err)
		}
		if limit <= 0 {
			return 0, nil, usageErrorf("--limit %q: want a positive byte count", limitFlag)
		}
	}
	if oomFlag == "" {
		return limit, nil, nil
	}
	text := oomFlag
	if name, ok := strings.CutPrefix(text, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return 0, nil, usageErrorf("--oom-message: %v", err)
		}
		text = string(b)
	}
	msg, err := whatif.ParseOOMMessage(text)
	if err != nil {
		return 0, nil, usageErrorf("--oom-message: %v", err)
	}
	if limit > 0 {
		return 0, nil, usageErrorf("--oom-message and --limit both set the cap: give one")
	}
	return limit, msg, nil
}
