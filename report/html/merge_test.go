package html

import (
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// ddpReports builds the reports of the two ranks of testdata's DDP run,
// which started recording about a second apart.
func ddpReports(t *testing.T) []*Report {
	t.Helper()
	out := testdataReports(t, "ddp_rank0", "ddp_rank1")
	for _, r := range out {
		name := r.Title
		// A rank's file lists the other rank's device with nothing on
		// it: keep the device with a trace, as snapview report does.
		var devs []DeviceView
		for _, d := range r.Devices {
			if d.Timeline != nil {
				devs = append(devs, d)
			}
		}
		if len(devs) != 1 {
			t.Fatalf("%s: %d devices with a timeline", name, len(devs))
		}
		r.Devices = devs
	}
	return out
}

// TestMergeOneClock: the ranks' timelines are drawn on one clock, time_us
// from the earliest first entry, every x moved by the rank's late start;
// AlignSteps then lines up their first steps.
func TestMergeOneClock(t *testing.T) {
	rs := ddpReports(t)
	first := []int64{rs[0].Devices[0].FirstUS, rs[1].Devices[0].FirstUS}
	origin := min(first[0], first[1])
	if first[0] == first[1] {
		t.Fatalf("the ranks started at the same time_us %d: nothing to line up", first[0])
	}
	// What each rank's report draws on its own clock.
	type own struct{ x0, peak, step, single int64 }
	var before []own
	for _, r := range rs {
		d := &r.Devices[0]
		before = append(before, own{d.Timeline.X[0], d.Peak.X, d.Steps[0].X0, d.Singles[len(d.Singles)-1].X0})
	}
	m := Merge(rs, "ddp", "Ranks", "")
	var xMax int64
	for k, d := range m.Devices {
		dx := first[k] - origin
		b := before[k]
		if d.Timeline.X[0] != b.x0+dx || d.Peak.X != b.peak+dx || d.Steps[0].X0 != b.step+dx || d.Singles[len(d.Singles)-1].X0 != b.single+dx {
			t.Errorf("rank %d: first x %d, peak %d, step %d, single %d; want each moved by %d from %+v", k, d.Timeline.X[0], d.Peak.X, d.Steps[0].X0, d.Singles[len(d.Singles)-1].X0, dx, b)
		}
		for _, lv := range d.Timeline.Levels {
			if lv.X[0] < dx {
				t.Errorf("rank %d: a level starts at %d, before the rank's start %d", k, lv.X[0], dx)
			}
		}
		xMax = max(xMax, d.Timeline.X[len(d.Timeline.X)-1])
	}
	for k, d := range m.Devices {
		if d.XMax != xMax || d.XByIndex {
			t.Errorf("rank %d: x axis to %d (by index %v), want %d by time", k, d.XMax, d.XByIndex, xMax)
		}
	}
	// The reports merged are left as they were.
	if rs[0].Devices[0].Timeline.X[0] != before[0].x0 || rs[1].Devices[0].Timeline.X[0] != before[1].x0 {
		t.Error("Merge changed the reports it merged")
	}

	if err := AlignSteps(m); err != nil {
		t.Fatal(err)
	}
	at := m.Devices[0].Steps[0].X0
	for k, d := range m.Devices {
		if d.Steps[0].X0 != at {
			t.Errorf("--align step: rank %d's first step at %d, rank 0's at %d", k, d.Steps[0].X0, at)
		}
		if d.Timeline.X[0] < 0 {
			t.Errorf("--align step: rank %d starts at %d", k, d.Timeline.X[0])
		}
	}
	// A file without steps cannot be aligned on them.
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := buildHTML(s, Options{Title: "mlp_train"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Devices[0].Steps) == 0 {
		if err := AlignSteps(Merge([]*Report{rs[0], r}, "x", "Ranks", "")); err == nil {
			t.Error("AlignSteps with a file without steps: no error")
		}
	}
}
