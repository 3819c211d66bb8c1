package stats

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/snapshot"
)

// PoolFigures are one private pool's figures: a pool whose segments carry
// a segment_pool_id other than (0, 0), a CUDA-graph capture's pool or a
// user torch.cuda.MemPool (c10/cuda/CUDACachingAllocator.cpp,
// PrivatePool). memory_stats() does not report them: they are summed from
// the file's segments (at the dump) and from the replay (over the trace).
//
// "Active" here is the bytes of the pool's live allocations: its
// active_allocated blocks (a block pending free is no longer live). Sizes
// are bytes.
type PoolFigures struct {
	Pool snapshot.PoolID

	// At the dump, from the file's segments (Known.Current): the pool's
	// segments, their total_size, and its active_allocated bytes and
	// blocks.
	SegmentsAtEnd  int
	ReservedAtEnd  int64
	ActiveAtEnd    int64
	BlocksAtEnd    int // active_allocated blocks
	PendingFreeEnd int64

	// Over the trace, from the replay (Known.History, HighWater):
	// ReservedHighWater is the most bytes the pool held in segments at
	// once (before the first entry or after any entry); ActiveAtPeak the
	// pool's active_allocated bytes at the device's allocated peak (the
	// replay's PeakIndex); Allocations the alloc entries that landed in
	// the pool; FirstAlloc the first of them (-1: none in the trace).
	ReservedHighWater int64
	ActiveAtPeak      int64
	Allocations       int
	FirstAlloc        int

	// Known is the trust of the figures: Current for the figures at the
	// dump; History for ActiveAtPeak (the device's history); HighWater
	// for ReservedHighWater and Allocations, with HighWaterWhy saying why
	// it is not Exact (see [PoolTrust]). Without a trace History and
	// HighWater are Unknown.
	Known        Known
	HighWater    Exactness
	HighWaterWhy string
}

// Abandoned reports whether the pool holds segments and no active block
// at the dump (no live allocation, none pending free on a stream): its
// memory stays reserved, unusable by any other pool, until the graph or
// MemPool is freed.
func (p *PoolFigures) Abandoned() bool {
	return p.SegmentsAtEnd > 0 && p.ActiveAtEnd == 0 && p.PendingFreeEnd == 0
}

// Why texts of [PoolTrust].
const (
	// PoolWhyCreatedBefore: the trace starts after the pool was created.
	PoolWhyCreatedBefore = "the trace starts after the pool was created (it held segments before the first entry)"
	// PoolWhyFreedUnknown: a segment freed in the trace may have been
	// the pool's.
	PoolWhyFreedUnknown = "segments were freed in the trace and trace entries carry no pool id: some may have been the pool's"
)

// PoolTrust decides the trust of a pool's high-water and allocation
// count from the device's history trust (Known.History) and what the
// replay saw: before reports whether the pool held segments before the
// first trace entry of a seeded replay (the trace starts after the pool
// was created), freedUnknown whether a segment whose pool the file does
// not give (trace entries carry none; only segments still in the file
// have one) was freed or unmapped in the trace. In order: History
// Unknown gives Unknown; either condition gives LowerBound; otherwise
// Exact, even in a seeded replay: a pool with no segment before the trace
// was created inside it, as private pool ids are never reused
// (c10/cuda/CUDACachingAllocator.cpp, release_cached_blocks frees a pool
// only once no graph or MemPool uses it).
func PoolTrust(history Exactness, before, freedUnknown bool) (Exactness, string) {
	switch {
	case history == Unknown:
		return Unknown, ""
	case before:
		return LowerBound, PoolWhyCreatedBefore
	case freedUnknown:
		return LowerBound, PoolWhyFreedUnknown
	}
	return Exact, ""
}

// CurrentPools returns the figures at the dump of the private pools of
// one device, from the file's segments alone, sorted by pool id (nil when
// the device has none). The history figures are zero and Unknown,
// FirstAlloc -1.
func CurrentPools(s *snapshot.Snapshot, device int) []PoolFigures {
	var out []PoolFigures
	idx := map[snapshot.PoolID]int{}
	lo, hi := s.DeviceSegments(device)
	for i := lo; i < hi; i++ {
		seg := &s.Segments[i]
		if seg.Device != device || seg.Pool.IsDefault() {
			continue
		}
		k, ok := idx[seg.Pool]
		if !ok {
			k = len(out)
			idx[seg.Pool] = k
			out = append(out, PoolFigures{Pool: seg.Pool, FirstAlloc: -1, Known: Known{Current: Exact}})
		}
		p := &out[k]
		p.SegmentsAtEnd++
		p.ReservedAtEnd += seg.TotalSize
		for j := range seg.Blocks {
			switch b := &seg.Blocks[j]; b.State {
			case snapshot.StateActiveAllocated:
				p.ActiveAtEnd += b.Size
				p.BlocksAtEnd++
			case snapshot.StateActivePendingFree:
				p.PendingFreeEnd += b.Size
			}
		}
	}
	SortPools(out)
	return out
}

// SortPools sorts pools by pool id.
func SortPools(pools []PoolFigures) {
	slices.SortFunc(pools, func(a, b PoolFigures) int { return ComparePoolIDs(a.Pool, b.Pool) })
}

// ComparePoolIDs orders pool ids by their first, then second number.
func ComparePoolIDs(a, b snapshot.PoolID) int {
	if c := cmp.Compare(a[0], b[0]); c != 0 {
		return c
	}
	return cmp.Compare(a[1], b[1])
}
