package replay

import (
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// poolTrack follows the private pools of one device over a replay, for
// Result.Pools: each pool's reserved and active_allocated bytes after
// every entry, their high-water, the active bytes at the allocated peak,
// and the alloc entries that landed in the pool. A segment's pool is the
// machine's (from the file's segments: trace entries carry no pool id).
// It costs O(1) per entry plus O(pools) at each new allocated peak, and
// is made only for a device whose file segments hold a private pool.
type poolTrack struct {
	idx    map[snapshot.PoolID]int
	figs   []stats.PoolFigures
	cur    []poolCur
	before []bool // the pool held segments before the first entry
	// freedUnknown: a segment of no known private pool was freed or
	// unmapped in the trace.
	freedUnknown bool
	peakSeen     bool
	peak         int64 // allocated_bytes.all.current at the peak so far
}

type poolCur struct{ reserved, active int64 }

// newPoolTrack returns the tracker for the runner x, whose machine holds
// the seed state, or nil when the file's segments of the device hold no
// private pool.
func newPoolTrack(x *runner) *poolTrack {
	var t *poolTrack
	for _, fs := range x.fileSeg {
		if fs.Pool.IsDefault() {
			continue
		}
		if t == nil {
			t = &poolTrack{idx: map[snapshot.PoolID]int{}}
		}
		t.pool(fs.Pool)
	}
	if t == nil {
		return nil
	}
	m := x.m
	for _, si := range m.liveSegments() {
		s := &m.segs[si]
		if s.pool.IsDefault() {
			continue
		}
		k := t.pool(s.pool)
		t.before[k] = true
		t.cur[k].reserved += s.size
		for b := s.head; b >= 0; b = m.blocks[b].next {
			if blk := &m.blocks[b]; blk.state == snapshot.StateActiveAllocated {
				t.cur[k].active += blk.size
			}
		}
		t.figs[k].ReservedHighWater = t.cur[k].reserved
	}
	return t
}

// pool returns the index of pool id, adding it.
func (t *poolTrack) pool(id snapshot.PoolID) int {
	k, ok := t.idx[id]
	if !ok {
		k = len(t.figs)
		t.idx[id] = k
		t.figs = append(t.figs, stats.PoolFigures{Pool: id, FirstAlloc: -1})
		t.cur = append(t.cur, poolCur{})
		t.before = append(t.before, false)
	}
	return k
}

// private returns the index of the private pool of segment si, -1 for the
// default pools.
func (t *poolTrack) private(m *machine, si int32) int {
	if si < 0 || m.segs[si].pool.IsDefault() {
		return -1
	}
	return t.pool(m.segs[si].pool)
}

// reserve adds n bytes (negative: removes) to the pool of segment si; a
// removal from no known private pool sets freedUnknown.
func (t *poolTrack) reserve(m *machine, si int32, n int64) {
	k := t.private(m, si)
	if k < 0 {
		if n < 0 {
			t.freedUnknown = true
		}
		return
	}
	t.cur[k].reserved += n
	t.figs[k].ReservedHighWater = max(t.figs[k].ReservedHighWater, t.cur[k].reserved)
}

// release takes the allocated block at addr, if any, out of its pool's
// active bytes (free_requested, or a free_completed standing for one).
func (t *poolTrack) release(m *machine, addr snapshot.Addr) {
	bi, ok := m.blockAt.Get(addr)
	if !ok || m.blocks[bi].state != snapshot.StateActiveAllocated {
		return
	}
	if k := t.private(m, m.blocks[bi].seg); k >= 0 {
		t.cur[k].active -= m.blocks[bi].size
	}
}

// before is called ahead of entry i's step, after is called once it is
// applied; b is the block an alloc entry made (-1: none).
func (t *poolTrack) beforeStep(m *machine, e *snapshot.TraceEntry) {
	switch e.Action {
	case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
		t.release(m, e.Addr)
	case snapshot.ActionSegmentFree:
		if si, ok := m.segAt[e.Addr]; ok && !m.segs[si].expandable {
			t.reserve(m, si, -m.segs[si].size)
		} else {
			t.freedUnknown = true
		}
	case snapshot.ActionSegmentUnmap:
		t.reserve(m, m.segmentContaining(e.Addr), -e.Size)
	}
}

func (t *poolTrack) afterStep(m *machine, i int, e *snapshot.TraceEntry, b int32, segNew bool) {
	switch e.Action {
	case snapshot.ActionAlloc:
		if b >= 0 {
			if k := t.private(m, m.blocks[b].seg); k >= 0 {
				t.cur[k].active += m.blocks[b].size
				p := &t.figs[k]
				if p.Allocations++; p.FirstAlloc < 0 {
					p.FirstAlloc = i
				}
			}
		}
	case snapshot.ActionSegmentAlloc:
		if si, ok := m.segAt[e.Addr]; ok && segNew {
			t.reserve(m, si, e.Size)
		}
	case snapshot.ActionSegmentMap:
		t.reserve(m, m.segmentContaining(e.Addr), e.Size)
	}
	if v := m.st.AllocatedBytes[stats.PoolAll].Current; !t.peakSeen || v > t.peak {
		t.peakSeen, t.peak = true, v
		for k := range t.figs {
			t.figs[k].ActiveAtPeak = t.cur[k].active
		}
	}
}

// result returns the pools' history figures, sorted by pool id, their
// trust decided by stats.PoolTrust from the device's history trust.
func (t *poolTrack) result(history stats.Exactness) []stats.PoolFigures {
	if t == nil {
		return nil
	}
	out := make([]stats.PoolFigures, len(t.figs))
	for k, p := range t.figs {
		p.Known.History = history
		p.HighWater, p.HighWaterWhy = stats.PoolTrust(history, t.before[k], t.freedUnknown)
		out[k] = p
	}
	stats.SortPools(out)
	return out
}
