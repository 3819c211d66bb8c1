package explain

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/analyze"
	"github.com/snapview/snapview/snapshot"
)

// A reserved gap is worth a finding when the bytes reserved but not
// allocated at the allocated peak are at least a quarter of the reserved
// bytes then, and at least gapMinBytes.
const gapMinBytes = 64 << 20

// reservedGap returns reserved minus allocated bytes at the allocated
// peak (r.PeakIndex: the moment memory was most needed), and whether it is
// worth a finding.
func reservedGap(r *analyze.Result) (int64, bool) {
	if r == nil || len(r.Allocated) == 0 {
		return 0, false
	}
	p := r.Peaks()
	gap := p.ReservedAtAllocated - p.Allocated
	return gap, gap >= gapMinBytes && 4*gap >= p.ReservedAtAllocated
}

// gapFinding explains a reserved gap at the allocated peak from the
// state there (in.PeakState): where the cached bytes sit (pool, stream),
// how much of them are split remainders torch cannot release
// (inactive_split_bytes), blocks pending free on other streams
// (active_pending_free), and private pools; with whatif's best setting.
func gapFinding(in Input) (Finding, bool) {
	r := in.Replay
	gap, ok := reservedGap(r)
	if !ok {
		return Finding{}, false
	}
	hist := r.Stats.Known.History
	p := r.Peaks()
	f := Finding{Kind: KindReservedGap, Severity: SeverityWarning, Entry: r.PeakIndex}
	f.add("allocated_at_peak_bytes", p.Allocated, Bytes, hist)
	f.add("reserved_at_peak_bytes", p.ReservedAtAllocated, Bytes, hist)
	f.add("gap_bytes", gap, Bytes, hist)
	// torch's peaks (memory_stats' .peak, as summary gives them): they
	// count the state before the trace too.
	f.add("peak_allocated_bytes", r.Stats.AllocatedBytes[analyze.PoolAll].Peak, Bytes, hist)
	f.add("peak_reserved_bytes", r.Stats.ReservedBytes[analyze.PoolAll].Peak, Bytes, hist)
	if st := in.PeakState; st != nil {
		f.add("non_releasable_bytes", st.Stats.InactiveSplitBytes[analyze.PoolAll].Current, Bytes, hist)
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
		slices.SortStableFunc(free, func(a, b analyze.FreeSpace) int { return cmp.Compare(b.FreeBytes, a.FreeBytes) })
		if len(free) > 0 {
			f.PoolSet, f.Large, f.Pool, f.Stream = true, free[0].Large, free[0].Pool, free[0].Stream
			f.add("top_pool_free_bytes", free[0].FreeBytes, Bytes, hist)
			f.add("top_pool_free_blocks", int64(free[0].Blocks), Count, hist)
			f.add("top_pool_largest_free_bytes", free[0].Largest, Bytes, hist)
		}
	}
	setBest(&f, in)
	return f, true
}
