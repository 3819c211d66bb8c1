package analysis

import (
	"context"
	"errors"
	"testing"

	"github.com/snapview/snapview/analyze/steps"
)

// TestLeakReports: of several devices, one without the moment is skipped
// with a warning, and when none has it the error says so; a device the
// user picked that lacks it is the device's own *AbsentError.
func TestLeakReports(t *testing.T) {
	s := load(t, "kv_eval.pickle")
	f := New(s, Options{})
	oom := steps.Moment{Kind: steps.MomentOOM}
	reps, notes, err := f.LeakReports(context.Background(), LeaksRequest{Devices: []int{0, 1}, At: &oom, AtText: "oom"})
	var a *AbsentError
	if !errors.As(err, &a) || a.Msg != "no device has the moment --at oom" || reps != nil {
		t.Errorf("LeakReports(oom) = %d reports, %v; want no device has the moment", len(reps), err)
	}
	if len(notes) != 2 || notes[0].Kind != Warning || notes[1].Text != "device 1 skipped: device 1 has no oom entry, nor has any other device" {
		t.Errorf("notes = %+v, want device 0 and 1 skipped", notes)
	}
	_, notes, err = f.LeakReports(context.Background(), LeaksRequest{Devices: []int{1}, Picked: true, At: &oom, AtText: "oom"})
	if !errors.As(err, &a) || a.Msg != "device 1 has no oom entry, nor has any other device" || len(notes) != 0 {
		t.Errorf("LeakReports(oom, device 1) = notes %+v, %v; want device 1's AbsentError", notes, err)
	}
	reps, notes, err = f.LeakReports(context.Background(), LeaksRequest{Devices: []int{0, 1}})
	if err != nil || len(reps) != 2 || len(notes) != 0 {
		t.Errorf("LeakReports(auto) = %d reports, notes %+v, %v; want 2 reports", len(reps), notes, err)
	}
}
