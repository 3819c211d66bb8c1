package replay

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"

	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// TestTraceCoverageCorpus checks FromStart against the ground truth the
// generator recorded in meta.json (recorded_from_start).
func TestTraceCoverageCorpus(t *testing.T) {
	root := Corpus(t)
	metas := corpus.Match(t, root, "torch2.11/*/meta.json", 16)
	checked := 0
	for _, m := range metas {
		data, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			GroundTruth struct {
				RecordedFromStart *bool `json:"recorded_from_start"`
				Trace             *bool `json:"trace"`
			} `json:"ground_truth"`
		}
		if err := json.Unmarshal(data, &meta); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		want := meta.GroundTruth.RecordedFromStart
		if want == nil && meta.GroundTruth.Trace != nil && !*meta.GroundTruth.Trace {
			f := false
			want = &f
		}
		if want == nil {
			continue
		}
		s, err := snapshot.Load(filepath.Join(filepath.Dir(m), "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		c := TraceCoverage(s, 0)
		if got := c.FromStart(); got != *want {
			t.Errorf("%s: FromStart() = %v, want %v (coverage %+v)", filepath.Base(filepath.Dir(m)), got, *want, c)
		}
		checked++
	}
	t.Logf("checked %d snapshots against recorded_from_start", checked)
	corpus.AtLeast(t, "recordings with a recorded_from_start", checked, 15)
}

func TestTraceCoverageRules(t *testing.T) {
	tr := func(a snapshot.Action, addr snapshot.Addr) snapshot.TraceEntry {
		return snapshot.TraceEntry{Action: a, Addr: addr, Flags: snapshot.FlagTime, TimeUS: int64(addr)}
	}
	seg := func(blocks ...snapshot.Block) snapshot.Segment {
		return snapshot.Segment{TotalSize: 2 << 20, Blocks: blocks}
	}
	live := func(addr snapshot.Addr) snapshot.Block {
		return snapshot.Block{Address: addr, Size: 512, State: snapshot.StateActiveAllocated}
	}
	tests := []struct {
		name      string
		s         *snapshot.Snapshot
		fromStart bool
		orphans   int
		untraced  int
		reason    string
	}{
		{"empty", &snapshot.Snapshot{HasDeviceTraces: true, Traces: [][]snapshot.TraceEntry{{}}}, false, 0, 0, "no trace, nothing to cover"},
		{"complete", &snapshot.Snapshot{
			Traces:   [][]snapshot.TraceEntry{{tr(snapshot.ActionAlloc, 10), tr(snapshot.ActionAlloc, 20), tr(snapshot.ActionFreeRequested, 10), tr(snapshot.ActionFreeCompleted, 10)}},
			Segments: []snapshot.Segment{seg(live(20))},
		}, true, 0, 0, "every free matches an alloc, every live block was allocated"},
		{"orphan free", &snapshot.Snapshot{
			Traces: [][]snapshot.TraceEntry{{tr(snapshot.ActionFreeRequested, 10), tr(snapshot.ActionFreeCompleted, 10), tr(snapshot.ActionAlloc, 20)}},
		}, false, 1, 0, "free_requested + free_completed of one unseen address is one orphan"},
		{"ghost block", &snapshot.Snapshot{
			Traces:   [][]snapshot.TraceEntry{{tr(snapshot.ActionAlloc, 20)}},
			Segments: []snapshot.Segment{seg(live(20), live(30))},
		}, false, 0, 1, "block 30 was allocated before the trace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := TraceCoverage(tt.s, 0)
			if c.FromStart() != tt.fromStart || c.OrphanFrees != tt.orphans || c.UntracedBlocks != tt.untraced {
				t.Errorf("TraceCoverage = %+v; want FromStart %v, %d orphans, %d untraced (%s)", c, tt.fromStart, tt.orphans, tt.untraced, tt.reason)
			}
		})
	}
}

// TestReplayCoverage checks that the Coverage a replay finds in its first
// pass is TraceCoverage's, on every real file.
func TestReplayCoverage(t *testing.T) {
	root := Corpus(t)
	var paths []string
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/snapshot.pickle", 17}, {"torch2.11-probe/*.pickle", 13}, {"public/*.pickle", 34}, {"field/*.pickle", 2}, {"hostile/*.pickle", 9}} {
		paths = append(paths, corpus.Match(t, root, pat.glob, pat.min)...)
	}
	checked := 0
	for _, p := range paths {
		s, err := snapshot.Load(p)
		if err != nil {
			continue
		}
		for _, dev := range s.Devices() {
			r, err := Run(s, dev, Options{Mode: StatsOnly})
			if err != nil {
				continue
			}
			if want := TraceCoverage(s, dev); r.Coverage != want {
				t.Errorf("%s device %d: the replay's coverage %+v, TraceCoverage %+v", p, dev, r.Coverage, want)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no device checked")
	}
	t.Logf("%d devices checked", checked)
}
