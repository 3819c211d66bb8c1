package analysis

import (
	"context"
	"errors"
	"fmt"

	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/steps"
)

// LeaksRequest says which devices [File.LeakReports] ranks, and at which
// moment.
type LeaksRequest struct {
	// Devices are the devices to rank, in order.
	Devices []int
	// Picked is true when the user named the device (--device): a moment
	// the device lacks is then an error, not a device skipped.
	Picked bool
	// At is the moment after which allocations count as live; nil:
	// leaks.DefaultLeakMoment of each device (`--at auto`). AtText is how
	// the user wrote it, for errors.
	At     *steps.Moment
	AtText string
	// Options are leaks.Leaks' (At is set per device).
	Options leaks.LeakOptions
}

// LeakReports ranks the live allocations of each of req.Devices (Leaks),
// one device at a time: each replay is dropped once its report is made
// (Forget), as a file of many devices needs. A device without trace
// entries is ranked at the state the file holds, whatever the moment.
//
// The notes are a warning for each replay that ends in a state other than
// the file's segments (EndStateNote, "live allocations") and, of several
// devices not Picked, one for each device left out for lacking the moment
// (an oom on a device without one). Errors: ctx's, a replay's or Leaks',
// a moment the device lacks (*AbsentError, see MomentErr) or one that
// does not apply (*steps.MomentError), and an *AbsentError when no device
// has the moment; the notes met until then come back with them.
func (f *File) LeakReports(ctx context.Context, req LeaksRequest) ([]*leaks.LeakReport, []Note, error) {
	var (
		reps  []*leaks.LeakReport
		notes []Note
	)
	for _, dev := range req.Devices {
		if err := ctx.Err(); err != nil {
			return nil, notes, err
		}
		r, err := f.Replay(dev)
		if err != nil {
			return nil, notes, err
		}
		if !r.Check.Equal {
			notes = append(notes, EndStateNote("", []int{dev}, "live allocations", r.Check.Differences))
		}
		o := req.Options
		o.At = leaks.DefaultLeakMoment(r)
		if req.At != nil && len(r.Allocated) > 0 { // without a trace only the file's state exists
			if o.At, err = req.At.Resolve(f.Snap, r); err != nil {
				err = MomentErr(f.Snap, dev, *req.At, err)
				var a *AbsentError
				if req.Picked || len(req.Devices) == 1 || !errors.As(err, &a) {
					return nil, notes, err
				}
				// Of several devices, one may have no OOM (or no peak).
				notes = append(notes, Note{Kind: Warning, Text: fmt.Sprintf("device %d skipped: %s", dev, a.Msg)})
				continue
			}
		}
		rep, err := f.Leaks(dev, o)
		if err != nil {
			return nil, notes, err
		}
		f.Forget(dev)
		reps = append(reps, rep)
	}
	if len(reps) == 0 && len(req.Devices) > 0 {
		return nil, notes, &AbsentError{Msg: fmt.Sprintf("no device has the moment --at %s", req.AtText)}
	}
	return reps, notes, nil
}
