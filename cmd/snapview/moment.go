package main

import (
	"errors"
	"fmt"
	"strings"

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
// command's: a moment the file lacks is an absent error (exit 1, with a
// hint for a missing OOM), one that does not apply a usage error; other
// errors are returned as they are.
func momentError(s *snapshot.Snapshot, device int, m steps.Moment, err error) error {
	var me *steps.MomentError
	if !errors.As(err, &me) {
		return err
	}
	switch {
	case me.Absent && me.Kind == steps.MomentOOM && m.N == 0:
		return noOOM(s, device)
	case me.Absent:
		return absentf("", "%s", me.Msg)
	}
	return usageErrorf("%s", me.Msg)
}

// resolveMomentFlag is resolveMoment for the flag named flag ("--to"):
// its errors name that flag where Resolve's name --at.
func resolveMomentFlag(flag string, s *snapshot.Snapshot, r *replay.Result, m steps.Moment) (int, error) {
	i, err := resolveMoment(s, r, m)
	return i, renameFlag(err, flag)
}

// renameFlag returns err with "--at" in its message replaced by flag.
func renameFlag(err error, flag string) error {
	if err == nil || flag == "--at" || !strings.Contains(err.Error(), "--at") {
		return err
	}
	msg := strings.ReplaceAll(err.Error(), "--at", flag)
	var ae *absentError
	if errors.As(err, &ae) {
		return &usageError{&absentError{msg: strings.ReplaceAll(ae.msg, "--at", flag), hint: ae.hint}}
	}
	var ue *usageError
	if errors.As(err, &ue) {
		return usageErrorf("%s", msg)
	}
	return errors.New(msg)
}

// absentError is the error of a --at moment one device's trace does not
// have while another device may: leaks skips such a device when it shows
// several. hint, when not "", follows the message ("; devices with one:
// 1 (use --device 1)").
type absentError struct{ msg, hint string }

func (e *absentError) Error() string { return e.msg + e.hint }

// absentf returns an *absentError as a usage error.
func absentf(hint, format string, args ...any) error {
	return &usageError{&absentError{msg: fmt.Sprintf(format, args...), hint: hint}}
}

// noOOM is the error of --at oom on device dev, whose trace has no oom
// entry: it names the devices that have one.
func noOOM(s *snapshot.Snapshot, dev int) error {
	_, with := s.OOMCounts()
	switch {
	case len(with) > 0:
		return absentf(fmt.Sprintf("; devices with one: %s (use --device %d)", joinInts(with), with[0]), "device %d has no oom entry", dev)
	case len(s.Devices()) > 1:
		return absentf("", "device %d has no oom entry, nor has any other device", dev)
	}
	return absentf("", "device %d has no oom entry", dev)
}
