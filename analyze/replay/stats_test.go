package replay

import (
	"reflect"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/stats"

	"github.com/snapview/snapview/snapshot"
)

// TestReplayStatsEqualsReplay checks that ReplayStats gives Replay's end
// figures, end check and seeding on every real file and a synthetic
// trace, without the per-entry series.
func TestReplayStatsEqualsReplay(t *testing.T) {
	type input struct {
		name string
		s    *snapshot.Snapshot
	}
	inputs := []input{{"synthetic churn", SyntheticChurn(5000)}}
	for _, ss := range SharedSnapshots(t) {
		s, err := snapshot.Load(ss.Path)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{ss.Name, s})
	}
	n := 0
	for _, in := range inputs {
		for _, d := range in.s.Devices() {
			full, err := Run(in.s, d, Options{})
			if err != nil {
				t.Fatalf("%s device %d: %v", in.name, d, err)
			}
			r, err := Run(in.s, d, Options{Mode: StatsOnly})
			if err != nil {
				t.Fatalf("%s device %d: ReplayStats: %v", in.name, d, err)
			}
			n++
			if !reflect.DeepEqual(r.Stats, full.Stats) {
				t.Errorf("%s device %d: Stats differ:\n got %+v\nwant %+v", in.name, d, r.Stats, full.Stats)
			}
			if !reflect.DeepEqual(r.Check, full.Check) || r.Seeded != full.Seeded || r.Device != d {
				t.Errorf("%s device %d: Check/Seeded %+v %v, Replay's %+v %v", in.name, d, r.Check, r.Seeded, full.Check, full.Seeded)
			}
			if r.Allocated != nil || r.Active != nil || r.Reserved != nil || r.Requested != nil || r.Allocs != nil || r.OOMs != nil || r.PeakIndex != -1 {
				t.Errorf("%s device %d: ReplayStats filled the series", in.name, d)
			}
		}
	}
	t.Logf("%d device replays compared", n)
}

// TestNumSyncAllStreamsExactness: num_sync_all_streams counts
// synchronize_and_free_events calls, which no trace shows. A replay
// recorded from the first allocation has exact history figures, but must
// not call its 0 "exact"; torch's own memory_stats() is exact.
func TestNumSyncAllStreamsExactness(t *testing.T) {
	exactness := func(st *stats.MemoryStats, key string) stats.Exactness {
		t.Helper()
		for _, f := range st.Figures() {
			if f.Key == key {
				return f.Exactness
			}
		}
		t.Fatalf("no figure %q", key)
		return stats.Unknown
	}
	r, err := Run(Snap([]snapshot.Segment{Seg(SegBase, 2*MiB, "small", Blk(SegBase, 512, 512, AAlloc), Blk(SegBase+512, 2*MiB-512, 0, Inact))},
		Ev(SegAl, SegBase, 2*MiB), Ev(Alloc, SegBase, 512)), 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Seeded || r.Stats.Known.History != stats.Exact {
		t.Fatalf("replay from the start: Seeded %t, History %v; want false, exact", r.Seeded, r.Stats.Known.History)
	}
	if got := exactness(&r.Stats, "num_sync_all_streams"); got != stats.Unknown {
		t.Errorf("replayed num_sync_all_streams is %v, want unknown (a trace does not show it)", got)
	}
	if got := exactness(&r.Stats, "num_device_alloc"); got != stats.Exact {
		t.Errorf("replayed num_device_alloc is %v, want exact (segment_alloc entries count it)", got)
	}
	flat := map[string]int64{} // every figure distinct
	for i, f := range (&stats.MemoryStats{}).Figures() {
		flat[f.Key] = int64(i + 1)
	}
	torch, err := stats.StatsFromFlat(0, flat)
	if err != nil {
		t.Fatal(err)
	}
	if got := exactness(torch, "num_sync_all_streams"); got != stats.Exact {
		t.Errorf("num_sync_all_streams from memory_stats() is %v, want exact", got)
	}
}
