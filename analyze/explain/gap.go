package explain

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// A reserved gap is worth a finding when torch's peak reserved bytes
// exceed its peak allocated bytes by a fifth of the peak reserved at
// least, and by gapMinBytes, over a history that is exact (two lower
// bounds bound no gap).
const gapMinBytes = 64 << 20

// reservedGap returns the peak reserved minus the peak allocated bytes
// (memory_stats' .peak, as summary gives them: what a user compares), and
// whether it is worth a finding.
func reservedGap(r *replay.Result) (int64, bool) {
	if r == nil || len(r.Allocated) == 0 || r.Stats.Known.History != stats.Exact || r.PeakReservedIndex < 0 {
		return 0, false
	}
	res, alloc := r.Stats.ReservedBytes[stats.PoolAll].Peak, r.Stats.AllocatedBytes[stats.PoolAll].Peak
	gap := res - alloc
	return gap, gap >= gapMinBytes && 5*gap >= res
}

// gapFinding explains a reserved gap from the state at the reserved peak
// (in.PeakState, after entry Result.PeakReservedIndex): where the cached
// bytes sit (pool, stream), how much of them are split remainders torch
// cannot release (inactive_split_bytes), blocks pending free on other
// streams (active_pending_free), and private pools; with whatif's best
// setting.
func gapFinding(in Input) (Finding, bool) {
	r := in.Replay
	gap, ok := reservedGap(r)
	if !ok {
		return Finding{}, false
	}
	hist := r.Stats.Known.History
	f := Finding{Kind: KindReservedGap, Severity: SeverityWarning, Entry: r.PeakReservedIndex}
	f.add("peak_reserved_bytes", r.Stats.ReservedBytes[stats.PoolAll].Peak, Bytes, hist)
	f.add("peak_allocated_bytes", r.Stats.AllocatedBytes[stats.PoolAll].Peak, Bytes, hist)
	f.add("gap_bytes", gap, Bytes, hist)
	if st := in.PeakState; st != nil {
		f.add("reserved_bytes", st.Stats.ReservedBytes[stats.PoolAll].Current, Bytes, hist)
		f.add("allocated_bytes", st.Stats.AllocatedBytes[stats.PoolAll].Current, Bytes, hist)
		f.add("non_releasable_bytes", st.Stats.InactiveSplitBytes[stats.PoolAll].Current, Bytes, hist)
		var pending, private int64
		for _, seg := range st.Segments {
			for _, b := range seg.Blocks {
				switch {
				case b.State == snapshot.StateActivePendingFree:
					pending += b.Size
				case !b.State.Active() && !seg.Pool.IsDefault():
					private += b.Size
				}
			}
		}
		f.add("pending_free_bytes", pending, Bytes, hist)
		f.add("private_pool_free_bytes", private, Bytes, hist)
		// Where: the pool and stream caching the most free bytes.
		free := slices.Clone(st.Free)
		slices.SortStableFunc(free, func(a, b replay.FreeSpace) int { return cmp.Compare(b.FreeBytes, a.FreeBytes) })
		if len(free) > 0 {
			f.PoolSet, f.Large, f.Pool, f.Stream = true, free[0].Large, free[0].Pool, free[0].Stream
			f.add("top_pool_free_bytes", free[0].FreeBytes, Bytes, hist)
			f.add("top_pool_free_blocks", int64(free[0].Blocks), Count, hist)
			f.add("top_pool_largest_free_bytes", free[0].Largest, Bytes, hist)
		}
	}
	if st := in.PeakState; st != nil {
		// The segments held by small live blocks: mostly free, yet
		// release_cached_blocks could not give them back.
		tr := trace(in.Snap, r.Device)
		n, segBytes, total := pinned(r, tr, st.Index, st, true, &f)
		f.add("pinned_segments", int64(n), Count, hist)
		f.add("pinned_segment_bytes", segBytes, Bytes, hist)
		f.add("stranded_bytes", total, Bytes, hist)
		f.Mode = "release"
	}
	setBest(&f, in)
	return f, true
}

// NeedsPeakState reports whether [Explain] reads the state at r's reserved
// peak (Input.PeakState): when there is a reserved gap to explain.
func NeedsPeakState(r *replay.Result) bool {
	_, ok := reservedGap(r)
	return ok
}
