package stats

import (
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot"
)

// TestCurrentPools: the figures at the dump per private pool, sorted by
// pool id; a pool with segments and no active block is abandoned, one
// whose only block is pending free on a stream is not (yet).
func TestCurrentPools(t *testing.T) {
	a, b, c := SegBase, SegBase+snapshot.Addr(100*MiB), SegBase+snapshot.Addr(200*MiB)
	seg := func(addr snapshot.Addr, pool snapshot.PoolID, blocks ...snapshot.Block) snapshot.Segment {
		sg := Seg(addr, 20*MiB, "large", blocks...)
		sg.Pool = pool
		return sg
	}
	s := Snap([]snapshot.Segment{
		seg(c, snapshot.PoolID{2, 0}, Blk(c, 4*MiB, 4*MiB, APend), Blk(c+snapshot.Addr(4*MiB), 16*MiB, 0, Inact)),
		seg(a, snapshot.PoolID{1, 0}, Blk(a, 4*MiB, 4*MiB, AAlloc), Blk(a+snapshot.Addr(4*MiB), 16*MiB, 0, Inact)),
		seg(b, snapshot.PoolID{}, Blk(b, 20*MiB, 20*MiB, AAlloc)),
		seg(b+snapshot.Addr(20*MiB), snapshot.PoolID{3, 0}, Blk(b+snapshot.Addr(20*MiB), 20*MiB, 0, Inact)),
	})
	got := CurrentPools(s, 0)
	want := []PoolFigures{
		{Pool: snapshot.PoolID{1, 0}, SegmentsAtEnd: 1, ReservedAtEnd: 20 * MiB, ActiveAtEnd: 4 * MiB, BlocksAtEnd: 1, FirstAlloc: -1, Known: Known{Current: Exact}},
		{Pool: snapshot.PoolID{2, 0}, SegmentsAtEnd: 1, ReservedAtEnd: 20 * MiB, PendingFreeEnd: 4 * MiB, FirstAlloc: -1, Known: Known{Current: Exact}},
		{Pool: snapshot.PoolID{3, 0}, SegmentsAtEnd: 1, ReservedAtEnd: 20 * MiB, FirstAlloc: -1, Known: Known{Current: Exact}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CurrentPools mismatch (-want +got):\n%s", diff)
	}
	if got[0].Abandoned() || got[1].Abandoned() || !got[2].Abandoned() {
		t.Errorf("abandoned: %v, %v, %v; want the third pool only", got[0].Abandoned(), got[1].Abandoned(), got[2].Abandoned())
	}
	if CurrentPools(s, 1) != nil {
		t.Errorf("a device without segments has pools")
	}
}

// TestPoolTrust is stats.PoolTrust's table.
func TestPoolTrust(t *testing.T) {
	tests := []struct {
		history      Exactness
		before, free bool
		want         Exactness
		why          string
	}{
		{Exact, false, false, Exact, ""},
		{LowerBound, false, false, Exact, ""}, // a seeded device, the pool created in the trace
		{LowerBound, true, false, LowerBound, PoolWhyCreatedBefore},
		{Exact, false, true, LowerBound, PoolWhyFreedUnknown},
		{Unknown, true, true, Unknown, ""},
	}
	for _, tt := range tests {
		if got, why := PoolTrust(tt.history, tt.before, tt.free); got != tt.want || why != tt.why {
			t.Errorf("PoolTrust(%v, %v, %v) = %v %q, want %v %q", tt.history, tt.before, tt.free, got, why, tt.want, tt.why)
		}
	}
}
