package main

import (
	"errors"

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
// command's: a moment the file lacks is an absent error
// (analysis.Absent, with a hint for a missing OOM) and one that does not
// apply a usage error; other errors are returned as they are.
func momentError(s *snapshot.Snapshot, device int, m steps.Moment, err error) error {
	var me *steps.MomentError
	if !errors.As(err, &me) {
		return err
	}
	if a := analysis.Absent(s, device, m, err); a != nil {
		return &usageError{a}
	}
	return usageErrorf("%s", me.Msg)
}

// resolveMomentFlag is resolveMoment for the flag named flag ("--to"):
// its errors name that flag where Resolve's name --at.
func resolveMomentFlag(flag string, s *snapshot.Snapshot, r *replay.Result, m steps.Moment) (int, error) {
	i, err := resolveMoment(s, r, m)
	return i, renameFlag(err, flag)
}

// renameFlag returns err with "--at" in its message replaced by flag
// (analysis.RenameFlag), a usage error still one.
func renameFlag(err error, flag string) error {
	var ue *usageError
	if errors.As(err, &ue) {
		if r := analysis.RenameFlag(err, flag); r != err {
			return &usageError{r}
		}
		return err
	}
	return momentUsage(analysis.RenameFlag(err, flag))
}

// momentUsage returns err, a view's error, as the command's: a moment the
// file lacks (*analysis.AbsentError, see analysis.MomentErr) or one that
// does not apply (*steps.MomentError) is a usage error; other errors are
// returned as they are.
func momentUsage(err error) error {
	var (
		a  *analysis.AbsentError
		me *steps.MomentError
		ue *usageError
	)
	if err == nil || errors.As(err, &ue) || !errors.As(err, &a) && !errors.As(err, &me) {
		return err
	}
	return &usageError{err}
}
