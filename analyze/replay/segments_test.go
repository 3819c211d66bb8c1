package replay

import (
	"strings"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/stats"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot"
)

func TestSegmentUsages(t *testing.T) {
	blk := func(size, req int64, st snapshot.BlockState) snapshot.Block {
		return snapshot.Block{Size: size, RequestedSize: req, State: st}
	}
	s := &snapshot.Snapshot{Segments: []snapshot.Segment{
		{Device: 0, Address: 0x1000, TotalSize: 4096, Type: "small", Stream: 7, Blocks: []snapshot.Block{
			blk(1024, 1000, snapshot.StateActiveAllocated),
			blk(512, 512, snapshot.StateActivePendingFree),
			blk(2048, 513, snapshot.StateInactive), // stale requested_size
			blk(512, 0, snapshot.StateInactive),
		}},
		{Device: 1, Address: 0x9000, TotalSize: 2 << 20, Type: "large", Pool: snapshot.PoolID{1, 0}, Blocks: []snapshot.Block{
			blk(2<<20, 2<<20, snapshot.StateActiveAllocated),
		}},
		{Device: 0, Address: 0x5000, TotalSize: 20 << 20, Type: "large", Blocks: []snapshot.Block{
			blk(20<<20, 0, snapshot.StateInactive),
		}},
	}}
	got := SegmentUsages(s, 0)
	want := []SegmentUsage{
		{Index: 0, Device: 0, Addr: 0x1000, Size: 4096, Stream: 7, Segments: 1,
			Blocks: 4, AllocatedBlocks: 1, PendingFreeBlocks: 1, InactiveBlocks: 2,
			AllocatedBytes: 1024, RequestedBytes: 1000, PendingFreeBytes: 512, PendingFreeRequestedBytes: 512, InactiveBytes: 2560, LargestFree: 2048},
		{Index: 2, Device: 0, Addr: 0x5000, Size: 20 << 20, Large: true, Segments: 1,
			Blocks: 1, InactiveBlocks: 1, InactiveBytes: 20 << 20, LargestFree: 20 << 20},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SegmentUsages(s, 0) mismatch (-want +got):\n%s", diff)
	}
	if got := got[0].FreeBytes(); got != 4096-1000 {
		t.Errorf("FreeBytes() = %d, want %d (size minus requested bytes of live tensors)", got, 4096-1000)
	}
	if got := got[0].InternalFreeBytes(); got != 24 {
		t.Errorf("InternalFreeBytes() = %d, want 24", got)
	}

	all := SegmentUsages(s, -1)
	if len(all) != 3 {
		t.Fatalf("SegmentUsages(s, -1): %d segments, want 3", len(all))
	}
	tot := SumSegments(all)
	if tot.Segments != 3 || tot.Size != 4096+(22<<20) || tot.RequestedBytes != 1000+(2<<20) || tot.LargestFree != 20<<20 || tot.Index != -1 {
		t.Errorf("SumSegments = %+v", tot)
	}
	var order []string
	for _, p := range PoolUsages(all) {
		kind := "small"
		if p.Large {
			kind = "large"
		}
		order = append(order, p.Pool.String()+" "+kind)
	}
	if diff := cmp.Diff([]string{"(0, 0) large", "(0, 0) small", "(1, 0) large"}, order); diff != "" {
		t.Errorf("PoolUsages order (-want +got):\n%s", diff)
	}
	if got := SegmentUsages(&snapshot.Snapshot{}, -1); got == nil || len(got) != 0 {
		t.Errorf("SegmentUsages of an empty snapshot = %#v, want an empty non-nil slice", got)
	}
}

// TestSegmentUsagesAgreeWithCurrentStats checks that the per-pool usage
// sums to the Cur Usage figures on every real snapshot.
func TestSegmentUsagesAgreeWithCurrentStats(t *testing.T) {
	for _, c := range StatsCases(t) {
		if strings.HasPrefix(c.Name, "big/") {
			continue // covered by TestCurrentStatsCorpus; slow
		}
		s, err := snapshot.Load(c.Pickle)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range s.Devices() {
			st := stats.CurrentStats(s, d)
			pools := PoolUsages(SegmentUsages(s, d))
			var large, small SegmentUsage
			for i := range pools {
				if pools[i].Large {
					large.add(&pools[i])
				} else {
					small.add(&pools[i])
				}
			}
			for _, g := range []struct {
				pool stats.Pool
				u    *SegmentUsage
			}{{stats.PoolLarge, &large}, {stats.PoolSmall, &small}} {
				got := []int64{g.u.Size, g.u.AllocatedBytes, g.u.ActiveBytes(), g.u.ActiveRequestedBytes(), int64(g.u.AllocatedBlocks)}
				want := []int64{st.ReservedBytes[g.pool].Current, st.AllocatedBytes[g.pool].Current, st.ActiveBytes[g.pool].Current,
					st.RequestedBytes[g.pool].Current, st.Allocation[g.pool].Current}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s device %d %v: reserved, allocated, active, requested, allocations (-CurrentStats +PoolUsages):\n%s", c.Name, d, g.pool, diff)
				}
			}
		}
	}
}
