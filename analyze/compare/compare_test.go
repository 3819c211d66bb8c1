package compare

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/info"
	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/corpus"

	"github.com/google/go-cmp/cmp"

	"github.com/snapview/snapview/snapshot"
)

// sideAt loads a file, replays device dev and measures it at moment m.
func sideAt(t *testing.T, path string, dev int, m steps.Moment, opts SideOptions) *Side {
	t.Helper()
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(s, dev, replay.Options{Mode: replay.Peaks})
	if err != nil {
		t.Fatal(err)
	}
	i, err := m.Resolve(s, r)
	if err != nil {
		t.Fatalf("%s: %v", m, err)
	}
	sd, err := MeasureSide(s, r, i, opts)
	if err != nil {
		t.Fatal(err)
	}
	sd.File = path
	return sd
}

// checkTotals: the stacks of each side add up to its allocated bytes.
func checkTotals(t *testing.T, d *Diff) {
	t.Helper()
	var base, new int64
	for _, s := range d.Stacks {
		base += s.BaseBytes
		new += s.NewBytes
	}
	a := d.figure("allocated_bytes.all.current")
	if base != a.Base || new != a.New {
		t.Errorf("stacks add up to %d -> %d, allocated_bytes.all.current is %d -> %d", base, new, a.Base, a.New)
	}
}

// statsJSON reads a stats.json figure torch wrote for device 0.
func statsJSON(t *testing.T, path, key string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	all, err := stats.ParseStatsJSON(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	return all[0].Flat()[key]
}

// TestDiffSettingsWhatIf compares the same program under the default
// allocator and with expandable_segments, at the end: every stack has the
// same count and requested bytes, reserved differs by what torch itself
// reported, and the settings diff names expandable_segments.
func TestDiffSettingsWhatIf(t *testing.T) {
	dir := filepath.Join(Corpus(t), "whatif", "varlen_train")
	end := steps.Moment{Kind: steps.MomentEnd}
	base := sideAt(t, filepath.Join(dir, "default", "snapshot.pickle.xz"), 0, end, SideOptions{})
	new := sideAt(t, filepath.Join(dir, "expandable", "snapshot.pickle.xz"), 0, end, SideOptions{})
	d := Compare(base, new)
	if !d.SameAllocations {
		t.Error("SameAllocations is false")
	}
	for _, s := range d.Stacks {
		if s.BaseCount != s.NewCount || s.BaseRequested != s.NewRequested {
			t.Errorf("stack %q: %d allocations of %d requested bytes -> %d of %d", s.Key, s.BaseCount, s.BaseRequested, s.NewCount, s.NewRequested)
		}
	}
	checkTotals(t, d)
	const key = "reserved_bytes.all.current"
	want := statsJSON(t, filepath.Join(dir, "expandable", "stats.json"), key) - statsJSON(t, filepath.Join(dir, "default", "stats.json"), key)
	if got := d.figure(key); got.Delta != want || got.Exactness != stats.Exact {
		t.Errorf("%s delta = %d (%s), torch's stats.json say %d", key, got.Delta, got.Exactness, want)
	}
	if !slices.ContainsFunc(d.Settings, func(s SettingDiff) bool { return s.Key == "expandable_segments" }) {
		t.Errorf("settings diff %+v does not name expandable_segments", d.Settings)
	}
	if len(d.Notes) == 0 || !strings.Contains(d.Notes[0], "same allocations") || !strings.Contains(d.Notes[0], "expandable_segments") {
		t.Errorf("first note %q, want same allocations and the setting", d.Notes)
	}
}

// TestDiffLeakTrainSteps compares step 3 of the leak_train recording with
// its last step: the planted leaks' stacks (meta.json: the retained graph
// of snapgen.py:161-162 via 173, the inputs of 171, the clones of 180)
// come first, grown.
func TestDiffLeakTrainSteps(t *testing.T) {
	dir := filepath.Join(Corpus(t), "torch2.11", "leak_train")
	var meta struct {
		GroundTruth struct {
			Leak2 struct {
				Line  int64 `json:"line"`
				Count int   `json:"count"`
			} `json:"leak_2"`
		} `json:"ground_truth"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "snapshot.pickle")
	base := sideAt(t, path, 0, steps.Moment{Kind: steps.MomentStep, N: 3}, SideOptions{})
	new := sideAt(t, path, 0, steps.Moment{Kind: steps.MomentStep, N: -1}, SideOptions{})
	if base.Step != 3 || new.Step != new.Steps.Count {
		t.Errorf("steps %d and %d of %d, want 3 and the last", base.Step, new.Step, new.Steps.Count)
	}
	d := Compare(base, new)
	checkTotals(t, d)
	planted := []int64{161, 162, meta.GroundTruth.Leak2.Line, 171}
	for i, s := range d.Stacks[:len(planted)] {
		if len(s.Frames) == 0 || !slices.Contains(planted, s.Frames[0].Line) || s.Status != StackGrown {
			t.Errorf("stack %d: %s %+v, want a planted leak's (lines %v), grown", i+1, s.Status, s.Frames, planted)
		}
		if s.Frames[0].Line == meta.GroundTruth.Leak2.Line && s.NewCount != meta.GroundTruth.Leak2.Count {
			t.Errorf("leak_2 has %d allocations at the last step, meta.json says %d", s.NewCount, meta.GroundTruth.Leak2.Count)
		}
	}
	if d.SameAllocations {
		t.Error("SameAllocations is true")
	}
}

// TestRanksTwoDevices compares the two devices of one pipeline-parallel
// file: device 1 holds more (multigpu.py:47's blocks are twice as large
// there) and is flagged, and its stacks vary most.
func TestRanksTwoDevices(t *testing.T) {
	path := filepath.Join(Corpus(t), "torch2.11", "two_devices", "snapshot.pickle")
	peak := steps.Moment{Kind: steps.MomentPeak}
	sides := []*Side{sideAt(t, path, 0, peak, SideOptions{}), sideAt(t, path, 1, peak, SideOptions{})}
	rk := CompareRanks(sides, 5)
	if rk.Median != 0 || rk.Outlier != 1 {
		t.Fatalf("median rank %d, outlier %d; want 0 and 1", rk.Median, rk.Outlier)
	}
	if rk.Diff == nil {
		t.Fatal("no diff of the outlier")
	}
	checkTotals(t, rk.Diff)
	if len(rk.Stacks) == 0 || rk.Stacks[0].Frames[0].Line != 47 || rk.Stacks[0].MaxRank != 1 {
		t.Errorf("most varying stack %+v, want multigpu.py:47, largest on rank 1", rk.Stacks[:1])
	}
	for _, sp := range rk.Spreads {
		if sp.Min > sp.Median || sp.Median > sp.Max || sp.Spread != sp.Max-sp.Min {
			t.Errorf("spread %+v out of order", sp)
		}
	}
}

// TestOutliersMedian: with an odd count the median is the middle rank, a
// rank within 10% is not flagged, one beyond is.
func TestOutliersMedian(t *testing.T) {
	mk := func(peak int64) *Side {
		s := &Side{PeakAllocated: peak, PeakReserved: peak, ReservedAtPeakAllocated: peak, PeakAllocatedStep: -1}
		s.Stats.Known.History = stats.Exact // a side with unknown peaks is left out
		return s
	}
	rk := CompareRanks([]*Side{mk(100), mk(109), mk(120), mk(95)}, 0)
	if rk.Median != 0 {
		// sorted 95, 100, 109, 120: the lower middle is 100 (rank 0)
		t.Errorf("median rank %d, want 0", rk.Median)
	}
	var flagged []int
	for _, o := range rk.Outliers {
		if o.Figure == RankPeakAllocated {
			flagged = append(flagged, o.Rank)
		}
	}
	if !slices.Equal(flagged, []int{2}) {
		t.Errorf("flagged %v, want [2] (120 is 20%% above 100; 109 and 95 are within 10%%)", flagged)
	}
	if rk.Outlier != 2 {
		t.Errorf("outlier %d, want 2", rk.Outlier)
	}
}

// TestMeasureSideReplays: a Side from ReplayPeaks (live blocks from the
// state) equals one from Replay (live blocks from Allocs), at the peak and
// at the end.
func TestMeasureSideReplays(t *testing.T) {
	for _, rel := range []string{"torch2.11/leak_train/snapshot.pickle", "torch2.11/two_devices/snapshot.pickle"} {
		s, err := snapshot.Load(filepath.Join(Corpus(t), rel))
		if err != nil {
			t.Fatal(err)
		}
		full, err := replay.Run(s, 0, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		light, err := replay.Run(s, 0, replay.Options{Mode: replay.Peaks})
		if err != nil {
			t.Fatal(err)
		}
		if full.PeakIndex != light.PeakIndex || full.PeakReservedIndex != light.PeakReservedIndex || full.Peaks() != light.Peaks() {
			t.Errorf("%s: peaks %d %d %+v (Replay) and %d %d %+v (ReplayPeaks)", rel, full.PeakIndex, full.PeakReservedIndex, full.Peaks(),
				light.PeakIndex, light.PeakReservedIndex, light.Peaks())
		}
		for _, at := range []int{full.PeakIndex, len(full.Allocated) - 1, 10} {
			a, err := MeasureSide(s, full, at, SideOptions{})
			if err != nil {
				t.Fatal(err)
			}
			b, err := MeasureSide(s, light, at, SideOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("%s at entry %d: Side from Replay and from ReplayPeaks differ (-Replay +ReplayPeaks):\n%s", rel, at, diff)
			}
		}
	}
}

// TestMomentStep resolves step:K on a recording with steps, and refuses
// it on one without.
func TestMomentStep(t *testing.T) {
	dir := Corpus(t)
	s, err := snapshot.Load(filepath.Join(dir, "torch2.11", "leak_train", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sl, st := steps.FindSteps(s, r, len(r.Allocated)-1)
	// meta.json: 30 steps; the Optimizer.step ranges end each of them, the
	// allocation that starts each marks them.
	if st.Source != steps.StepsPattern || st.Count != 30 {
		t.Fatalf("%d steps from %s, want 30 from the repeating allocation", st.Count, st.Source)
	}
	for _, k := range []int{0, 3, st.Count} {
		i, err := steps.Moment{Kind: steps.MomentStep, N: k}.Resolve(s, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := steps.StepOf(sl, i); got != k || i != sl[slices.IndexFunc(sl, func(x steps.LeakSlice) bool { return x.Step == k })].End {
			t.Errorf("step:%d resolved to entry %d (step %d)", k, i, got)
		}
	}
	_, err = steps.Moment{Kind: steps.MomentStep, N: st.Count + 1}.Resolve(s, r)
	var me *steps.MomentError
	if !errors.As(err, &me) || me.Absent {
		t.Errorf("step:%d past the last: error %v, want a MomentError", st.Count+1, err)
	}
}

// TestSideCoverageAgreesWithInfo: the coverage a Side takes from its
// replay is the one `info` finds from the trace (InspectCoverage), on the
// shared corpus.
func TestSideCoverageAgreesWithInfo(t *testing.T) {
	dir := Corpus(t)
	var files []string
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/snapshot.pickle", 17}, {"torch2.11-probe/*.pickle", 13}, {"public/*.pickle", 34}} {
		files = append(files, corpus.Match(t, dir, pat.glob, pat.min)...)
	}
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			continue
		}
		for _, dev := range s.Devices() {
			r, err := replay.Run(s, dev, replay.Options{Mode: replay.Peaks})
			if err != nil || len(replay.DeviceTrace(s, dev)) == 0 {
				continue
			}
			sd, err := MeasureSide(s, r, len(replay.DeviceTrace(s, dev))-1, SideOptions{NoSteps: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, di := range info.InspectCoverage(s, func(int) (bool, *replay.Coverage) { return r.Seeded, nil }) {
				if di.Device == dev && di.Coverage != sd.Coverage {
					t.Errorf("%s device %d: coverage %s, info says %s", filepath.Base(f), dev, sd.Coverage, di.Coverage)
				}
			}
		}
	}
}
