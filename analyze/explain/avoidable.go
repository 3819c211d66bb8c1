package explain

import (
	"cmp"
	"math"
	"slices"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// maxExamined is how many avoidable segment_allocs have their blockers
// searched (the largest requests first): each search reads the
// allocations made before it once.
const maxExamined = 16

// poolKey is where a block may be reused: the allocator looks for a free
// block in the request's pool (small or large, default or private) on the
// request's stream only (get_free_block's BlockPool and the stream in its
// search key).
type poolKey struct {
	large  bool
	pool   snapshot.PoolID
	stream uint64
}

// candidate is one avoidable segment_alloc.
type candidate struct {
	entry   int
	request int64 // the rounded request that made it, bytes
	free    int64 // the cached free bytes of its pool and stream then
	key     poolKey
	segs    []liveSeg // the pool's segments of at least request bytes then
}

type liveSeg struct {
	addr snapshot.Addr
	size int64
	key  poolKey
}

// avoidableMallocs finds the segment_allocs made while the cached free
// bytes of the request's pool and stream (reserved minus active, from the
// replay's allocations and the trace's segment entries) were at least the
// request: the cache held the bytes, in pieces too small (get_free_block
// found none), so alloc_block went to cudaMalloc. The request is the
// first allocation after the segment_alloc on its stream. Devices under
// expandable_segments are left out (their growth is segment_map, not a
// new segment), and so are those under max_split_size_mb: a cached block
// of max_split_size or more serves no smaller request, and none that is
// kLargeBuffer smaller (get_free_block), so free bytes there cover
// nothing by design.
func avoidableMallocs(in Input) (Finding, bool) {
	r := in.Replay
	tr := trace(in.Snap, r.Device)
	if cfg := r.Config(); len(tr) == 0 || cfg.ExpandableSegments || cfg.MaxSplitSize != math.MaxInt64 || len(r.Allocs) == 0 {
		return Finding{}, false
	}
	// The file's segments name the private pool of a segment that
	// survives to the dump, as the replay does.
	fileSeg := map[snapshot.Addr]*snapshot.Segment{}
	lo, hi := in.Snap.DeviceSegments(r.Device)
	for k := lo; k < hi; k++ {
		if fs := &in.Snap.Segments[k]; fs.Device == r.Device {
			fileSeg[fs.Address] = fs
		}
	}
	l, ok := newCacheLedger(r, len(tr))
	if !ok {
		return Finding{}, false
	}
	found := l.walk(r, tr, fileSeg)
	if len(found.cands) == 0 {
		return Finding{}, false
	}
	f := found.finding(r.Stats.Known.History)
	addBlockers(&f, r, tr, found.cands)
	setExpandable(&f, in.Whatif)
	return f, true
}

// setExpandable sets f's setting to whatif's row for the file's settings
// with expandable_segments:True (the setting that grows a pool in place
// instead of adding segments), fitting as whatif's verdict over the cap
// interval says, when w simulated under a cap (an OOM's, given or
// inferred): the advice then rests on the simulation explain already ran,
// not on a second judgement. Without a cap (or the row), f keeps no
// setting.
func setExpandable(f *Finding, w *whatif.Result) {
	if w == nil || len(w.Rows) == 0 || (w.Limit <= 0 && w.Inferred == nil) {
		return
	}
	want := w.Rows[0].Config
	want.ExpandableSegments = true
	for k := 1; k < len(w.Rows); k++ {
		if w.Rows[k].Config == want {
			setRow(f, w, k)
			return
		}
	}
}

// cacheLedger follows the reserved and active bytes of each pool and
// stream of one device through its trace.
type cacheLedger struct {
	// The few pools and streams of a device, numbered: reserved[k] and
	// active[k] are the bytes of keys[k].
	keys             []poolKey
	reserved, active []int64
	allocKey         []uint16                  // allocKey[a]: the number of r.Allocs[a]'s pool and stream
	segs             map[snapshot.Addr]liveSeg // the live segments by address
	// Frees by entry: head[i] lists the allocations free_completed at
	// i, each linked to the next by next.
	head, next []int32
	ka         int // the first allocation not yet counted active
}

// newCacheLedger numbers the pools and streams of r's allocations and
// starting segments, and counts the segments reserved and the
// allocations older than the trace (of n entries) active; false when the
// device has too many pools and streams to number.
func newCacheLedger(r *replay.Result, n int) (*cacheLedger, bool) {
	l := &cacheLedger{allocKey: make([]uint16, len(r.Allocs)), segs: map[snapshot.Addr]liveSeg{}}
	for a := range r.Allocs {
		al := &r.Allocs[a]
		l.allocKey[a] = uint16(min(l.id(poolKey{al.Large, al.Pool, al.Stream}), 1<<16-1))
	}
	if len(l.keys) >= 1<<16-1 {
		return nil, false
	}
	for _, sg := range r.InitialState() {
		if sg.Device != r.Device {
			continue
		}
		k := poolKey{large: allocator.IsLargeSegment(&sg), pool: sg.Pool, stream: sg.Stream}
		l.segs[sg.Address] = liveSeg{addr: sg.Address, size: sg.TotalSize, key: k}
		l.reserved[l.id(k)] += sg.TotalSize
	}
	l.head = make([]int32, n)
	for i := range l.head {
		l.head[i] = -1
	}
	l.next = make([]int32, len(r.Allocs))
	for a := range r.Allocs {
		al := &r.Allocs[a]
		if al.AllocIndex < 0 {
			l.active[l.allocKey[a]] += al.Size
			l.ka = a + 1
		}
		if f := al.FreeCompleted; f >= 0 && f < n {
			l.next[a] = l.head[f]
			l.head[f] = int32(a)
		}
	}
	return l, true
}

// id is k's number, given on first sight.
func (l *cacheLedger) id(k poolKey) int {
	for j := range l.keys {
		if l.keys[j] == k {
			return j
		}
	}
	l.keys = append(l.keys, k)
	l.reserved = append(l.reserved, 0)
	l.active = append(l.active, 0)
	return len(l.keys) - 1
}

// avoidableFound is what a walk over the trace found: the avoidable
// segment_allocs, their bytes, and all the segment_allocs.
type avoidableFound struct {
	cands     []candidate
	bytes     int64
	segAllocs int64
}

// walk replays tr's allocs, free_completeds and segment entries on the
// ledger and returns the segment_allocs made while their pool and stream
// had the request's bytes cached free.
func (l *cacheLedger) walk(r *replay.Result, tr []snapshot.TraceEntry, fileSeg map[snapshot.Addr]*snapshot.Segment) avoidableFound {
	var found avoidableFound
	for i := range tr {
		e := &tr[i]
		switch e.Action {
		case snapshot.ActionAlloc:
			for l.ka < len(r.Allocs) && r.Allocs[l.ka].AllocIndex <= i {
				l.active[l.allocKey[l.ka]] += r.Allocs[l.ka].Size
				l.ka++
			}
		case snapshot.ActionFreeCompleted:
			for a := l.head[i]; a >= 0; a = l.next[a] {
				l.active[l.allocKey[a]] -= r.Allocs[a].Size
			}
		case snapshot.ActionSegmentAlloc:
			found.segAllocs++
			k := poolKey{stream: e.Stream}
			k.large, k.pool = r.SegmentAllocPool(fileSeg[e.Addr], i, e)
			if c, ok := l.avoidable(r, i, k); ok {
				found.cands = append(found.cands, c)
				found.bytes += e.Size
			}
			l.segs[e.Addr] = liveSeg{addr: e.Addr, size: e.Size, key: k}
			l.reserved[l.id(k)] += e.Size
		case snapshot.ActionSegmentFree:
			if sg, ok := l.segs[e.Addr]; ok {
				l.reserved[l.id(sg.key)] -= sg.size
				delete(l.segs, e.Addr)
			}
		}
	}
	return found
}

// avoidable is the segment_alloc at entry i into pool and stream k as a
// candidate, with the pool's segments of at least the request, when the
// request (the next allocation on its stream and in its pool, among the
// next 8) was no more than k's cached free bytes.
func (l *cacheLedger) avoidable(r *replay.Result, i int, k poolKey) (candidate, bool) {
	for a := l.ka; a < len(r.Allocs) && a < l.ka+8; a++ {
		al := &r.Allocs[a]
		if al.Stream != k.stream || al.Large != k.large {
			continue
		}
		j := l.id(k)
		free := l.reserved[j] - l.active[j]
		if free < al.Size {
			return candidate{}, false
		}
		c := candidate{entry: i, request: al.Size, free: free, key: k}
		for _, sg := range l.segs {
			if sg.key == k && sg.size >= al.Size {
				c.segs = append(c.segs, sg)
			}
		}
		slices.SortFunc(c.segs, func(a, b liveSeg) int { return cmp.Compare(a.addr, b.addr) })
		return c, true
	}
	return candidate{}, false
}

// finding is the avoidable-malloc finding for what the walk found (at
// least one candidate), its counts under trust hist, placed at the first.
func (found avoidableFound) finding(hist stats.Exactness) Finding {
	first := found.cands[0]
	f := Finding{Kind: KindAvoidableMalloc, Severity: SeverityWarning, Entry: first.entry, Mode: "contiguity"}
	f.PoolSet, f.Large, f.Pool, f.Stream = true, first.key.large, first.key.pool, first.key.stream
	f.add("avoidable_segment_allocs", int64(len(found.cands)), Count, hist)
	f.add("avoidable_segment_bytes", found.bytes, Bytes, hist)
	f.add("segment_allocs", found.segAllocs, Count, hist)
	f.add("first_entry", int64(first.entry), Entry, stats.Exact)
	return f
}

// addBlockers adds to f the blockers of the largest requests among cands
// (maxExamined of them) and how many were examined, and of those how
// many had no segment of the pool large enough to search.
func addBlockers(f *Finding, r *replay.Result, tr []snapshot.TraceEntry, cands []candidate) {
	order := slices.Clone(cands)
	slices.SortStableFunc(order, func(a, b candidate) int { return cmp.Compare(b.request, a.request) })
	order = order[:min(len(order), maxExamined)]
	var groups [][]block
	var stranded []int64
	var ats []int
	var noSeg int
	for _, c := range order {
		w, bl, ok := candidateWindow(r, c)
		if !ok {
			noSeg++
			continue
		}
		groups = append(groups, bl)
		stranded = append(stranded, w.free)
		ats = append(ats, c.entry)
	}
	f.add("examined", int64(len(order)), Count, stats.Exact)
	f.add("examined_without_blockers", int64(noSeg), Count, r.Stats.Known.History)
	if len(groups) > 0 {
		f.Blockers = groupBlockers(r, tr, ats, groups, stranded)
	}
}

// candidateWindow rebuilds the blocks of c's segments just before its
// segment_alloc (the allocations made before it and not yet
// free_completed, in address order; the gaps are free blocks) and returns
// the best window (see minWindow) with its live blocks; false when no
// segment of the pool is at least the request.
func candidateWindow(r *replay.Result, c candidate) (window, []block, bool) {
	if len(c.segs) == 0 {
		return window{}, nil, false
	}
	type liveBlock struct {
		addr  snapshot.Addr
		size  int64
		alloc int
		stack snapshot.StackID
	}
	per := make([][]liveBlock, len(c.segs))
	for a := range r.Allocs {
		al := &r.Allocs[a]
		if al.AllocIndex >= c.entry {
			break
		}
		if al.FreeCompleted >= 0 && al.FreeCompleted < c.entry {
			continue
		}
		k, found := slices.BinarySearchFunc(c.segs, al.Addr, func(s liveSeg, x snapshot.Addr) int { return cmp.Compare(s.addr, x) })
		if !found {
			k--
		}
		if k < 0 || al.Addr >= c.segs[k].addr+snapshot.Addr(c.segs[k].size) {
			continue
		}
		per[k] = append(per[k], liveBlock{al.Addr, al.Size, a, al.Stack})
	}
	var best window
	var bestBlocks []block
	found := false
	for k, sg := range c.segs {
		lbs := per[k]
		slices.SortFunc(lbs, func(a, b liveBlock) int { return cmp.Compare(a.addr, b.addr) })
		var bs []block
		at := sg.addr
		for _, lb := range lbs {
			if lb.addr > at {
				bs = append(bs, block{size: int64(lb.addr - at), alloc: -1})
			}
			bs = append(bs, block{size: lb.size, live: true, alloc: lb.alloc, stack: lb.stack})
			at = lb.addr + snapshot.Addr(lb.size)
		}
		if end := sg.addr + snapshot.Addr(sg.size); end > at {
			bs = append(bs, block{size: int64(end - at), alloc: -1})
		}
		w, ok := minWindow(bs, c.request)
		if ok && (!found || w.better(best)) {
			best, found = w, true
			bestBlocks = nil
			for _, b := range bs[w.lo:w.hi] {
				if b.live {
					bestBlocks = append(bestBlocks, b)
				}
			}
		}
	}
	return best, bestBlocks, found && len(bestBlocks) > 0
}
