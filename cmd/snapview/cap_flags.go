package main

import "github.com/snapview/snapview/analyze/whatif"

// parseCapFlags reads the --limit and --oom-message flags whatif, explain
// and forecast share (whatif.ParseCap); its errors are usage errors.
func parseCapFlags(limitFlag, oomFlag string) (int64, *whatif.OOMMessage, error) {
	limit, msg, err := whatif.ParseCap(limitFlag, oomFlag)
	if err != nil {
		return 0, nil, &usageError{err}
	}
	return limit, msg, nil
}
