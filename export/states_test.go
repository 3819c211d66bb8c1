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
