package export

import (
	"errors"
	"slices"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
)

// DeviceAt is one device of a file at a moment, as StatesAt found it.
type DeviceAt struct {
	Device int
	// Idle is true for a device the allocator was never used on
	// (snapshot.IdleDevices: another rank's device in a distributed
	// process's file): it has no moment of its own, and no Result.
	Idle bool
	// Result is the device's replay.
	Result *replay.Result
	// State is the device's state at the moment; nil when the device is
	// Idle, Absent, or an error stopped StatesAt there.
	State *DeviceState
	// Absent is the *steps.MomentError (Absent) of a moment the device's
	// trace does not have (an oom on a device without one).
	Absent error
}

// StatesAt replays each device of the file an holds and takes its state at
// the moment at (a device without a trace: the state the file holds, for
// peak and end), named label in the profile's comments. It returns every
// device in order: those it leaves out say why (Idle, Absent). Any other
// error (a replay's, a moment that does not apply: a *steps.MomentError
// not Absent) stops it; the devices seen until then come back with it,
// the last with the Result the error met, if any.
func StatesAt(an *analysis.File, at steps.Moment, label string) ([]DeviceAt, error) {
	s := an.Snap
	idle := s.IdleDevices()
	var out []DeviceAt
	for _, d := range s.Devices() {
		if slices.Contains(idle, d) {
			out = append(out, DeviceAt{Device: d, Idle: true})
			continue
		}
		r, err := an.Replay(d)
		if err != nil {
			return out, err
		}
		da := DeviceAt{Device: d, Result: r}
		i := -1
		if len(r.Allocated) > 0 || at.Kind != steps.MomentPeak && at.Kind != steps.MomentEnd {
			if i, err = at.Resolve(s, r); err != nil {
				var me *steps.MomentError
				if errors.As(err, &me) && me.Absent {
					da.Absent = err
					out = append(out, da)
					continue
				}
				return append(out, da), err
			}
		}
		st, err := r.StateAt(i)
		if err != nil {
			return append(out, da), err
		}
		da.State = &DeviceState{Result: r, State: st, Moment: label}
		out = append(out, da)
	}
	return out, nil
}
