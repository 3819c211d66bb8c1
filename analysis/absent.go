package analysis

import (
	"errors"
	"fmt"

	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// AbsentError is the error of a moment (steps.Moment, --at) that one
// device's trace does not have while another device may: a view of
// several devices leaves such a device out with a note of Msg. Hint,
// when not "", follows Msg and names the devices that have the moment
// ("; devices with one: 1 (use --device 1)").
type AbsentError struct{ Msg, Hint string }

func (e *AbsentError) Error() string { return e.Msg + e.Hint }

// Absent returns the *AbsentError for err, an error of resolving m on
// device of s (steps.Moment.Resolve), when err says the moment is absent
// (a *steps.MomentError with Absent set; for the first oom, NoOOM's
// error); nil for any other error.
func Absent(s *snapshot.Snapshot, device int, m steps.Moment, err error) *AbsentError {
	var me *steps.MomentError
	switch {
	case !errors.As(err, &me) || !me.Absent:
		return nil
	case me.Kind == steps.MomentOOM && m.N == 0:
		return NoOOM(s, device)
	}
	return &AbsentError{Msg: me.Msg}
}

// NoOOM is the error of the moment oom on device dev, whose trace has no
// oom entry: its Hint names the devices of s that have one.
func NoOOM(s *snapshot.Snapshot, dev int) *AbsentError {
	_, with := s.OOMCounts()
	switch {
	case len(with) > 0:
		return &AbsentError{Msg: fmt.Sprintf("device %d has no oom entry", dev), Hint: fmt.Sprintf("; devices with one: %s (use --device %d)", units.IntList(with), with[0])}
	case len(s.Devices()) > 1:
		return &AbsentError{Msg: fmt.Sprintf("device %d has no oom entry, nor has any other device", dev)}
	}
	return &AbsentError{Msg: fmt.Sprintf("device %d has no oom entry", dev)}
}

// MomentErr is err, an error of resolving m on device of s, as a view
// returns it: an *AbsentError when the device lacks the moment (Absent),
// err itself otherwise (a *steps.MomentError of a moment that does not
// apply, or any other error); nil for nil.
func MomentErr(s *snapshot.Snapshot, device int, m steps.Moment, err error) error {
	if a := Absent(s, device, m, err); a != nil {
		return a
	}
	return err
}
