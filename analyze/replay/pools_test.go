package replay

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// TestPoolsRecorded checks Result.Pools on the recordings with private
// pools against figures computed by hand from their traces (a Python
// pass over the pickle: each pool's segments are the file's, the last
// segment_alloc at each address; blocks rounded as round_size).
func TestPoolsRecorded(t *testing.T) {
	tests := []struct {
		rel  string
		want []stats.PoolFigures
	}{
		{
			// The graph's pool (1, 0): segments at entries 45, 47, 49
			// (20, 32 and 2 MiB, captured at snapgen.py:325); the 20 MiB
			// segment at the same address before it (entries 9-41, the
			// warm-up on a side stream) was freed by empty_cache and is not
			// the pool's. 49 MiB of it live at the allocated peak (116 MiB),
			// 5 alloc entries, the first at entry 46. The
			// empty_cache's segment_free (entry 41) may have been a pool's
			// for all the file says: the high-water is a lower bound.
			rel: "torch2.11/cuda_graph/snapshot.pickle",
			want: []stats.PoolFigures{{
				Pool: snapshot.PoolID{1, 0}, ReservedHighWater: 54 * MiB, ActiveAtPeak: 51380224,
				Allocations: 5, FirstAlloc: 46,
				Known: stats.Known{History: stats.Exact}, HighWater: stats.LowerBound, HighWaterWhy: stats.PoolWhyFreedUnknown,
			}},
		},
		{
			// Two pools, nothing live in them at the allocated peak; the
			// OOM's release frees four default segments.
			rel: "torch2.11-probe/graph_pool.pickle",
			want: []stats.PoolFigures{
				{Pool: snapshot.PoolID{0, 1}, ReservedHighWater: 20 * MiB, Allocations: 1, FirstAlloc: firstAllocOf(t, "torch2.11-probe/graph_pool.pickle", snapshot.PoolID{0, 1}),
					Known: stats.Known{History: stats.Exact}, HighWater: stats.LowerBound, HighWaterWhy: stats.PoolWhyFreedUnknown},
				{Pool: snapshot.PoolID{1, 0}, ReservedHighWater: 22 * MiB, Allocations: 3, FirstAlloc: firstAllocOf(t, "torch2.11-probe/graph_pool.pickle", snapshot.PoolID{1, 0}),
					Known: stats.Known{History: stats.Exact}, HighWater: stats.LowerBound, HighWaterWhy: stats.PoolWhyFreedUnknown},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			s, err := snapshot.Load(filepath.Join(Corpus(t), tt.rel))
			if err != nil {
				t.Fatal(err)
			}
			// Every mode gives the same figures.
			for _, mode := range []Mode{Full, StatsOnly, Peaks} {
				r, err := Run(s, 0, Options{Mode: mode})
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, r.Pools); diff != "" {
					t.Errorf("mode %d: Pools mismatch (-want +got):\n%s", mode, diff)
				}
				if mode != Full {
					continue
				}
				// The allocations agree: every alloc entry the pool counts
				// is an Allocation in a segment of the pool.
				n := map[snapshot.PoolID]int{}
				for _, a := range r.Allocs {
					if a.AllocIndex >= 0 && !a.Pool.IsDefault() {
						n[a.Pool]++
					}
				}
				for _, p := range r.Pools {
					if n[p.Pool] != p.Allocations {
						t.Errorf("pool %v: %d allocations, Allocs say %d", p.Pool, p.Allocations, n[p.Pool])
					}
				}
			}
		})
	}
}

// firstAllocOf returns the first alloc entry whose block lands in a
// segment the file gives pool, by address (the probe's pool segments are
// allocated once each).
func firstAllocOf(t *testing.T, rel string, pool snapshot.PoolID) int {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(Corpus(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range s.Traces[0] {
		if e.Action != snapshot.ActionAlloc {
			continue
		}
		for _, sg := range s.Segments {
			if sg.Pool == pool && sg.Address <= e.Addr && e.Addr < sg.Address+snapshot.Addr(sg.TotalSize) {
				return i
			}
		}
	}
	return -1
}

// TestPoolsTrust checks stats.PoolTrust's rule through the replay on
// hand-made traces: a pool created inside a late-starting trace is exact,
// one that held segments before the trace is a lower bound, and a segment
// freed in the trace makes every pool's high-water a lower bound.
func TestPoolsTrust(t *testing.T) {
	pool := snapshot.PoolID{1, 0}
	a, b := SegBase, SegBase+snapshot.Addr(100*MiB)
	priv := func(addr snapshot.Addr, live bool) snapshot.Segment {
		sg := Seg(addr, 20*MiB, "large", Blk(addr, 20*MiB, 0, Inact))
		if live {
			sg = Seg(addr, 20*MiB, "large", Blk(addr, 4*MiB, 4*MiB, AAlloc), Blk(addr+snapshot.Addr(4*MiB), 16*MiB, 0, Inact))
		}
		sg.Pool = pool
		return sg
	}
	tests := []struct {
		name string
		s    *snapshot.Snapshot
		want stats.PoolFigures
	}{
		{
			name: "created in the trace",
			s:    Snap([]snapshot.Segment{priv(a, true)}, Ev(SegAl, a, 20*MiB), Ev(Alloc, a, 4*MiB)),
			want: stats.PoolFigures{Pool: pool, ReservedHighWater: 20 * MiB, ActiveAtPeak: 4 * MiB, Allocations: 1, FirstAlloc: 1,
				Known: stats.Known{History: stats.Exact}, HighWater: stats.Exact},
		},
		{
			// The pool's segment is older than the trace (seeded): the
			// high-water before it is not in the file.
			name: "created before the trace",
			s:    Snap([]snapshot.Segment{priv(a, true)}, Ev(Alloc, a, 4*MiB)),
			want: stats.PoolFigures{Pool: pool, ReservedHighWater: 20 * MiB, ActiveAtPeak: 4 * MiB, Allocations: 1, FirstAlloc: 0,
				Known: stats.Known{History: stats.LowerBound}, HighWater: stats.LowerBound, HighWaterWhy: stats.PoolWhyCreatedBefore},
		},
		{
			// A late trace whose pool is created inside it: the device's
			// history is a lower bound (a default segment is older), the
			// pool's is exact.
			name: "seeded device, pool created in the trace",
			s: Snap([]snapshot.Segment{Seg(b, 20*MiB, "large", Blk(b, 20*MiB, 20*MiB, AAlloc)), priv(a, true)},
				Ev(SegAl, a, 20*MiB), Ev(Alloc, a, 4*MiB)),
			want: stats.PoolFigures{Pool: pool, ReservedHighWater: 20 * MiB, ActiveAtPeak: 4 * MiB, Allocations: 1, FirstAlloc: 1,
				Known: stats.Known{History: stats.LowerBound}, HighWater: stats.Exact},
		},
		{
			// A segment at the pool's address was freed before the pool's
			// was made there: it is not counted in the pool (the file's
			// segment is the last one at the address), and as its pool is
			// unknown the high-water is a lower bound.
			name: "earlier segment at the same address",
			s: Snap([]snapshot.Segment{priv(a, true)},
				Ev(SegAl, a, 20*MiB), Ev(Alloc, a, 8*MiB), Ev(FreeRq, a, 8*MiB), Ev(FreeOK, a, 8*MiB), Ev(SegFr, a, 20*MiB),
				Ev(SegAl, a, 20*MiB), Ev(Alloc, a, 4*MiB)),
			want: stats.PoolFigures{Pool: pool, ReservedHighWater: 20 * MiB, ActiveAtPeak: 0, Allocations: 1, FirstAlloc: 6,
				Known: stats.Known{History: stats.Exact}, HighWater: stats.LowerBound, HighWaterWhy: stats.PoolWhyFreedUnknown},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Run(tt.s, 0, Options{Mode: StatsOnly})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Check.Equal {
				t.Fatalf("the replay does not end in the file's segments: %v", r.Check.Differences)
			}
			if diff := cmp.Diff([]stats.PoolFigures{tt.want}, r.Pools); diff != "" {
				t.Errorf("Pools mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
