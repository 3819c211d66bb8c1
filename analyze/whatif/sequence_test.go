package whatif

import (
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// TestSimulateEventsIsAnalyze: the request sequence Events reads, run
// through Simulate, gives what Analyze gives for the file's own settings
// and for a candidate, with and without a cap (the scaling series' GPT-2
// at batch 4, ../shared/snapshots/scaling).
func TestSimulateEventsIsAnalyze(t *testing.T) {
	f := filepath.Join(sharedOrSkip(t), "scaling", "gpt2_bs", "batch_4", "snapshot.pickle.xz")
	s, err := snapshot.Load(f)
	if err != nil {
		t.Skipf("%v", err)
	}
	r, err := replay.Run(s, 0, replay.Options{Mode: replay.StatsOnly})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Events(s, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, limit := range []int64{0, 3 << 30} {
		res, err := Analyze(s, 0, r, Options{Limit: limit, Confs: []string{"expandable_segments:True"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range res.Rows {
			got, err := Simulate(ev, row.Config, limit)
			if err != nil {
				t.Fatal(err)
			}
			if got != row.Outcome {
				t.Errorf("limit %d, %q: Simulate %+v, Analyze %+v", limit, row.Conf, got, row.Outcome)
			}
		}
	}
	if _, err := Simulate([]Event{{Kind: EventAlloc, ID: -1}}, allocator.Config{}, 0); err == nil {
		t.Error("Simulate took a negative id")
	}
}
