package export

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// TestStatesAt: at the peak StatesAt gives each device the state
// peakStates does; at an oom a trace without one gives the device as
// Absent, with no state; entry:N past the trace is a moment error that
// stops it.
func TestStatesAt(t *testing.T) {
	raw, err := snapshot.Load(filepath.Join("..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := replay.Complete(raw)
	an := analysis.New(s, analysis.Options{})
	devs, err := StatesAt(an, steps.Moment{Kind: steps.MomentPeak}, "peak")
	want := peakStates(t, s)
	if err != nil || len(devs) != len(want) {
		t.Fatalf("StatesAt(peak) = %d devices, %v; want %d", len(devs), err, len(want))
	}
	for i, da := range devs {
		if da.State == nil || da.Idle || da.Absent != nil || da.State.Moment != "peak" ||
			da.State.State.Stats.Allocation != want[i].State.Stats.Allocation {
			t.Errorf("device %d at the peak: %+v, want the state peakStates takes", da.Device, da)
		}
	}
	devs, err = StatesAt(an, steps.Moment{Kind: steps.MomentOOM}, "oom")
	var me *steps.MomentError
	if err != nil || len(devs) == 0 || devs[0].State != nil || !errors.As(devs[0].Absent, &me) || !me.Absent {
		t.Errorf("StatesAt(oom) = %+v, %v; want device 0 Absent", devs, err)
	}
	if _, err := StatesAt(an, steps.Moment{Kind: steps.MomentEntry, N: 1 << 30}, "entry"); err == nil {
		t.Errorf("StatesAt(entry:2^30): no error")
	}
}

// TestStates: a device the allocator was never used on is left out with a
// note naming the file; a moment no device has is the first device's
// *analysis.AbsentError, with no note repeating it.
func TestStates(t *testing.T) {
	load := func(name string) *analysis.File {
		raw, err := snapshot.Load(filepath.Join("..", "testdata", "snapshots", name))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := replay.Complete(raw)
		return analysis.New(s, analysis.Options{})
	}
	states, notes, err := States(load("ddp_rank0.pickle"), steps.Moment{Kind: steps.MomentPeak}, "peak", "rank0")
	if err != nil || len(states) != 1 || len(notes) != 1 {
		t.Fatalf("States(ddp_rank0, peak) = %d states, notes %+v, %v; want 1 state and 1 note", len(states), notes, err)
	}
	if n := notes[0]; n.Kind != analysis.Info || n.File != "rank0" || n.Text != "device 1 left out: the allocator was never used on it (a lone snapshot entry)" {
		t.Errorf("note = %+v", n)
	}
	_, notes, err = States(load("mlp_train.pickle"), steps.Moment{Kind: steps.MomentOOM}, "oom", "mlp")
	var a *analysis.AbsentError
	if !errors.As(err, &a) || len(notes) != 0 {
		t.Errorf("States(mlp_train, oom) = notes %+v, %v; want an AbsentError alone", notes, err)
	}
}
