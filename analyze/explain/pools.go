package explain

import (
	"github.com/snapview/snapview/snapshot"
)

// poolFindings describes each private pool of the device (a CUDA-graph
// capture's pool, a user torch.cuda.MemPool: segment_pool_id not (0, 0))
// from in.Pools, the figures every view shows (analysis.File.Pools): its
// reserved high-water over the trace, its active bytes at the allocated
// peak and at the end, its segments at the dump, and the stack (and
// compile context) of its first allocation in the trace. A pool with
// segments and no live block at the dump is "abandoned": its memory stays
// reserved until the graph or MemPool is freed.
//
// Without a trace (in.Replay nil) only the figures at the dump are given.
func poolFindings(in Input) []Finding {
	r := in.Replay
	var tr []snapshot.TraceEntry
	if r != nil {
		tr = trace(in.Snap, r.Device)
	}
	var out []Finding
	for k := range in.Pools {
		p := &in.Pools[k]
		f := Finding{Kind: KindPool, Severity: SeverityInfo, Entry: -1, PoolSet: true, Large: true, Pool: p.Pool}
		if r != nil {
			f.add("reserved_high_water_bytes", p.ReservedHighWater, Bytes, p.HighWater)
			f.add("active_at_peak_bytes", p.ActiveAtPeak, Bytes, p.Known.History)
		}
		f.add("active_at_end_bytes", p.ActiveAtEnd, Bytes, p.Known.Current)
		f.add("segments_at_end", int64(p.SegmentsAtEnd), Count, p.Known.Current)
		f.add("reserved_at_end_bytes", p.ReservedAtEnd, Bytes, p.Known.Current)
		if r != nil {
			f.add("allocations", int64(p.Allocations), Count, p.HighWater)
		}
		if p.Abandoned() {
			f.Severity, f.Note = SeverityWarning, "abandoned"
		}
		if i := p.FirstAlloc; i >= 0 && i < len(tr) {
			e := &tr[i]
			f.Entry = i
			if e.Stack > 0 {
				f.Stacks = append(f.Stacks, e.Stack)
			}
			if e.CompileContext != 0 && int(e.CompileContext) < len(in.Snap.Strings) {
				f.Context = in.Snap.Strings[e.CompileContext]
			}
		}
		out = append(out, f)
	}
	return out
}
