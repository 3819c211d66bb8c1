package stats

import (
	"os"
	"strings"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot"
)

// currentFigures returns the Cur Usage figures of s (every ".current" key,
// as a flat dict).
func currentFigures(s *MemoryStats) map[string]int64 {
	out := map[string]int64{}
	for _, f := range s.Figures() {
		if strings.HasSuffix(f.Key, ".current") {
			out[f.Key] = f.Value
		}
	}
	return out
}

// currentCase pairs a snapshot with the memory_stats() taken when it was
// dumped.

// TestCurrentStatsCorpus checks every Cur Usage figure CurrentStats derives
// from a real snapshot against the memory_stats() PyTorch reported at
// dump time.
func TestCurrentStatsCorpus(t *testing.T) {
	cases := StatsCases(t)
	var devices int
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			data, err := os.ReadFile(c.Stats)
			if err != nil {
				t.Fatal(err)
			}
			want, err := ParseStatsJSON(data, 0)
			if err != nil {
				t.Fatal(err)
			}
			snap, err := snapshot.Load(c.Pickle)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range want {
				got := CurrentStats(snap, w.Device)
				if got.Known.Current != Exact || got.Known.History != Unknown {
					t.Errorf("device %d: Known = %+v, want Current exact, the rest unknown", w.Device, got.Known)
				}
				if diff := cmp.Diff(currentFigures(w), currentFigures(got)); diff != "" {
					t.Errorf("device %d: Cur Usage mismatch (-memory_stats +CurrentStats):\n%s", w.Device, diff)
					continue
				}
				devices++
			}
		})
	}
	t.Logf("Cur Usage equal to memory_stats() on %d devices of %d snapshots", devices, len(cases))
}

func TestCurrentStatsRules(t *testing.T) {
	const MiB = 1 << 20
	blk := func(size, req int64, st snapshot.BlockState) snapshot.Block {
		return snapshot.Block{Size: size, RequestedSize: req, State: st}
	}
	s := &snapshot.Snapshot{
		Settings: &snapshot.AllocatorSettings{MaxSplitSize: 20 * MiB},
		Segments: []snapshot.Segment{
			{ // large, split: one live block, one pending free, one free
				Device: 0, TotalSize: 40 * MiB, Type: "large",
				Blocks: []snapshot.Block{
					blk(25*MiB, 25*MiB-1, snapshot.StateActiveAllocated),
					blk(5*MiB, 5*MiB, snapshot.StateActivePendingFree),
					blk(10*MiB, 513, snapshot.StateInactive),
				},
			},
			{ // small, one free block: releasable, not inactive_split
				Device: 0, TotalSize: 2 * MiB, Type: "small",
				Blocks: []snapshot.Block{blk(2*MiB, 0, snapshot.StateInactive)},
			},
			{ // expandable: reserved, but no segment and no inactive_split
				Device: 0, TotalSize: 20 * MiB, Type: "large", Expandable: true,
				Blocks: []snapshot.Block{
					blk(4*MiB, 4*MiB, snapshot.StateActiveAllocated),
					blk(16*MiB, 0, snapshot.StateInactive),
				},
			},
			{ // another device: ignored
				Device: 1, TotalSize: 2 * MiB, Type: "small",
				Blocks: []snapshot.Block{blk(2*MiB, 2*MiB, snapshot.StateActiveAllocated)},
			},
		},
	}
	want := map[string]int64{
		"reserved_bytes.all.current":         62 * MiB,
		"reserved_bytes.large_pool.current":  60 * MiB,
		"reserved_bytes.small_pool.current":  2 * MiB,
		"segment.all.current":                2,
		"segment.large_pool.current":         1,
		"segment.small_pool.current":         1,
		"allocated_bytes.all.current":        29 * MiB,
		"allocated_bytes.large_pool.current": 29 * MiB,
		"allocation.all.current":             2,
		"allocation.large_pool.current":      2,
		"active_bytes.all.current":           34 * MiB,
		"active_bytes.large_pool.current":    34 * MiB,
		"active.all.current":                 3,
		"active.large_pool.current":          3,
		"requested_bytes.all.current":        34*MiB - 1,
		"requested_bytes.large_pool.current": 34*MiB - 1,
		// Only the free block of the first segment: the lone small block
		// is releasable and the expandable one does not count.
		"inactive_split_bytes.all.current":        10 * MiB,
		"inactive_split_bytes.large_pool.current": 10 * MiB,
		"inactive_split.all.current":              1,
		"inactive_split.large_pool.current":       1,
		// max_split_size 20 MiB: the 25 MiB block, the 40 and 20 MiB
		// segments.
		"oversize_allocations.current": 1,
		"oversize_segments.current":    2,
	}
	got := currentFigures(CurrentStats(s, 0))
	for k, v := range got {
		if v == 0 {
			delete(got, k)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CurrentStats mismatch (-want +got):\n%s", diff)
	}

	s.Settings.MaxSplitSize = -1
	if st := CurrentStats(s, 0); st.OversizeAllocations.Current != 0 || st.OversizeSegments.Current != 0 {
		t.Errorf("max_split_size -1 (unlimited): oversize = %d, %d, want 0, 0", st.OversizeAllocations.Current, st.OversizeSegments.Current)
	}
	s.Settings = nil
	if st := CurrentStats(s, 0); st.MaxSplitSize != -1 || st.OversizeSegments.Current != 0 {
		t.Errorf("no allocator_settings: MaxSplitSize %d, oversize segments %d; want -1, 0", st.MaxSplitSize, st.OversizeSegments.Current)
	}
	if st := CurrentStats(s, 7); st.ReservedBytes[PoolAll].Current != 0 {
		t.Errorf("device without segments: reserved %d, want 0", st.ReservedBytes[PoolAll].Current)
	}
}
