package explain

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// poolStat gathers one private pool's figures.
type poolStat struct {
	id                    snapshot.PoolID
	first                 int // index into Allocs, -1 none
	allocs                int
	atPeak, atEnd         int64
	segs                  int
	reservedEnd           int64
	reservedHigh, current int64
	atEndFile             int64 // active_allocated bytes in the file's segments
}

// sortedPools returns the pools by id.
func sortedPools(pools map[snapshot.PoolID]*poolStat) []snapshot.PoolID {
	ids := make([]snapshot.PoolID, 0, len(pools))
	for id := range pools {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b snapshot.PoolID) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	return ids
}

// dumpPools describes the pools from the file's segments only (no trace).
func dumpPools(pools map[snapshot.PoolID]*poolStat) []Finding {
	var out []Finding
	for _, id := range sortedPools(pools) {
		p := pools[id]
		f := Finding{Kind: KindPool, Severity: SeverityInfo, Entry: -1, PoolSet: true, Large: true, Pool: id}
		f.add("active_at_end_bytes", p.atEndFile, Bytes, stats.Exact)
		f.add("segments_at_end", int64(p.segs), Count, stats.Exact)
		f.add("reserved_at_end_bytes", p.reservedEnd, Bytes, stats.Exact)
		if p.segs > 0 && p.atEndFile == 0 {
			f.Severity, f.Note = SeverityWarning, "abandoned"
		}
		out = append(out, f)
	}
	return out
}

// poolFindings describes each private pool (a CUDA-graph capture's pool,
// a user torch.cuda.MemPool: segment_pool_id not (0, 0)): its reserved
// high-water over the trace, its active bytes at the allocated peak and at
// the end, its segments at the dump, and the stack (and compile context)
// of its first allocation in the trace. A pool with segments and no
// active block at the dump is "abandoned": its memory stays reserved
// until the graph or MemPool is freed.
//
// A private pool's segments carry their pool id only in the file's
// segments: a segment freed before the dump is counted in the default
// pool by the replay too, so the high-water is a lower bound when some
// segment_free entries fall in the trace.
//
// Without a trace (r nil) only the figures at the dump are given, from the
// file's segments.
func poolFindings(in Input, device int) []Finding {
	r := in.Replay
	s := in.Snap
	pools := map[snapshot.PoolID]*poolStat{}
	get := func(id snapshot.PoolID) *poolStat {
		p := pools[id]
		if p == nil {
			p = &poolStat{id: id, first: -1}
			pools[id] = p
		}
		return p
	}
	fileSeg := map[snapshot.Addr]*snapshot.Segment{}
	lo, hi := s.DeviceSegments(device)
	for k := lo; k < hi; k++ {
		sg := &s.Segments[k]
		if sg.Device != device {
			continue
		}
		fileSeg[sg.Address] = sg
		if !sg.Pool.IsDefault() {
			p := get(sg.Pool)
			p.segs++
			p.reservedEnd += sg.TotalSize
			for _, b := range sg.Blocks {
				if b.State == snapshot.StateActiveAllocated {
					p.atEndFile += b.Size
				}
			}
		}
	}
	if r == nil {
		return dumpPools(pools)
	}
	if len(pools) == 0 {
		for k := range r.Allocs {
			if !r.Allocs[k].Pool.IsDefault() {
				get(r.Allocs[k].Pool)
			}
		}
	}
	if len(pools) == 0 {
		return nil
	}
	tr := trace(s, r.Device)
	end := len(tr) - 1
	for k := range r.Allocs {
		a := &r.Allocs[k]
		if a.Pool.IsDefault() {
			continue
		}
		p := get(a.Pool)
		p.allocs++
		if p.first < 0 && a.AllocIndex >= 0 {
			p.first = k
		}
		if r.PeakIndex >= 0 && a.Alive(r.PeakIndex) {
			p.atPeak += a.Size
		}
		if a.Alive(end) {
			p.atEnd += a.Size
		}
	}
	// Reserved high-water: the seed, then the trace's segment entries.
	segPool := map[snapshot.Addr]snapshot.PoolID{}
	for _, sg := range r.InitialState() {
		if sg.Device == r.Device && !sg.Pool.IsDefault() {
			segPool[sg.Address] = sg.Pool
			get(sg.Pool).current += sg.TotalSize
		}
	}
	freedInTrace := false
	for _, p := range pools {
		p.reservedHigh = p.current
	}
	for i := range tr {
		e := &tr[i]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			if fs := fileSeg[e.Addr]; fs != nil && !fs.Pool.IsDefault() {
				p := get(fs.Pool)
				segPool[e.Addr] = fs.Pool
				p.current += e.Size
				p.reservedHigh = max(p.reservedHigh, p.current)
			}
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			if id, ok := segPool[e.Addr]; ok {
				pools[id].current -= e.Size
				delete(segPool, e.Addr)
			} else {
				freedInTrace = true
			}
		}
	}
	hist := r.Stats.Known.History
	highExact := hist
	if freedInTrace && highExact == stats.Exact {
		highExact = stats.LowerBound
	}
	var out []Finding
	for _, id := range sortedPools(pools) {
		p := pools[id]
		f := Finding{Kind: KindPool, Severity: SeverityInfo, Entry: -1, PoolSet: true, Large: true, Pool: id}
		f.add("reserved_high_water_bytes", p.reservedHigh, Bytes, highExact)
		f.add("active_at_peak_bytes", p.atPeak, Bytes, hist)
		f.add("active_at_end_bytes", p.atEnd, Bytes, stats.Exact)
		f.add("segments_at_end", int64(p.segs), Count, stats.Exact)
		f.add("reserved_at_end_bytes", p.reservedEnd, Bytes, stats.Exact)
		f.add("allocations", int64(p.allocs), Count, hist)
		if p.segs > 0 && p.atEnd == 0 {
			f.Severity = SeverityWarning
			f.Note = "abandoned"
		}
		if p.first >= 0 {
			a := &r.Allocs[p.first]
			f.Entry = a.AllocIndex
			if a.Stack > 0 {
				f.Stacks = []snapshot.StackID{a.Stack}
			}
			if e := &tr[a.AllocIndex]; e.CompileContext != 0 && int(e.CompileContext) < len(s.Strings) {
				f.Context = s.Strings[e.CompileContext]
			}
		}
		out = append(out, f)
	}
	return out
}
