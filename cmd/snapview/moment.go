package main

import (
	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// parseMoment parses a MOMENT flag (--at, --base-at); errors are usage
// errors. Resolving it to a trace entry is steps.Moment.Resolve's job.
func parseMoment(s string) (steps.Moment, error) {
	return parseMomentFlag("--at", s)
}

// parseMomentFlag is parseMoment for the flag named flag ("--from"): its
// errors (steps.ParseMoment's) are usage errors that name that flag.
func parseMomentFlag(flag, s string) (steps.Moment, error) {
	m, err := steps.ParseMoment(s)
	if err != nil {
		return m, usageErrorf("%s %v", flag, err)
	}
	return m, nil
}

// resolveMoment resolves m on the replay r of a device of s; its errors
// are command errors (see momentError).
func resolveMoment(s *snapshot.Snapshot, r *replay.Result, m steps.Moment) (int, error) {
	i, err := m.Resolve(s, r)
	if err != nil {
		return 0, momentError(s, r.Device, m, err)
	}
	return i, nil
}

// momentError turns an error of resolving m on device of s into the
// command's (analysis.MomentError): a moment the file lacks or one that
// does not apply is a usage error; other errors are returned as they are.
func momentError(s *snapshot.Snapshot, device int, m steps.Moment, err error) error {
	return analysis.MomentError(s, device, m, err)
}

// resolveMomentFlag is resolveMoment for the flag named flag ("--to"):
// its errors name that flag where Resolve's name --at.
func resolveMomentFlag(flag string, s *snapshot.Snapshot, r *replay.Result, m steps.Moment) (int, error) {
	i, err := resolveMoment(s, r, m)
	return i, renameFlag(err, flag)
}

// renameFlag returns err with "--at" in its message replaced by flag
// (analysis.RenameFlag).
func renameFlag(err error, flag string) error { return analysis.RenameFlag(err, flag) }
