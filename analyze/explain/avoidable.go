package explain

import (
	"cmp"
	"math"
	"slices"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
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
	// The few pools and streams of a device, numbered: reserved[k] and
	// active[k] are the bytes of keys[k].
	var keys []poolKey
	var reserved, active []int64
	id := func(k poolKey) int {
		for j := range keys {
			if keys[j] == k {
				return j
			}
		}
		keys = append(keys, k)
		reserved = append(reserved, 0)
		active = append(active, 0)
		return len(keys) - 1
	}
	allocKey := make([]uint16, len(r.Allocs))
	for a := range r.Allocs {
		al := &r.Allocs[a]
		allocKey[a] = uint16(min(id(poolKey{al.Large, al.Pool, al.Stream}), 1<<16-1))
	}
	if len(keys) >= 1<<16-1 {
		return Finding{}, false
	}
	segs := map[snapshot.Addr]liveSeg{}
	for _, sg := range r.InitialState() {
		if sg.Device != r.Device {
			continue
		}
		k := poolKey{large: allocator.IsLargeSegment(&sg), pool: sg.Pool, stream: sg.Stream}
		segs[sg.Address] = liveSeg{addr: sg.Address, size: sg.TotalSize, key: k}
		reserved[id(k)] += sg.TotalSize
	}
	// Frees by entry: head[i] lists the allocations free_completed at i.
	head := make([]int32, len(tr))
	for i := range head {
		head[i] = -1
	}
	next := make([]int32, len(r.Allocs))
	ka := 0
	for a := range r.Allocs {
		al := &r.Allocs[a]
		if al.AllocIndex < 0 {
			active[allocKey[a]] += al.Size
			ka = a + 1
		}
		if f := al.FreeCompleted; f >= 0 && f < len(tr) {
			next[a] = head[f]
			head[f] = int32(a)
		}
	}
	var cands []candidate
	var segAllocs, bytes int64
	for i := range tr {
		e := &tr[i]
		switch e.Action {
		case snapshot.ActionAlloc:
			for ka < len(r.Allocs) && r.Allocs[ka].AllocIndex <= i {
				active[allocKey[ka]] += r.Allocs[ka].Size
				ka++
			}
		case snapshot.ActionFreeCompleted:
			for a := head[i]; a >= 0; a = next[a] {
				active[allocKey[a]] -= r.Allocs[a].Size
			}
		case snapshot.ActionSegmentAlloc:
			segAllocs++
			k := poolKey{stream: e.Stream}
			k.large, k.pool = r.SegmentAllocPool(fileSeg[e.Addr], i, e)
			// The request: the next allocation on the segment's stream.
			for a := ka; a < len(r.Allocs) && a < ka+8; a++ {
				al := &r.Allocs[a]
				if al.Stream != e.Stream || al.Large != k.large {
					continue
				}
				if j := id(k); reserved[j]-active[j] >= al.Size {
					free := reserved[j] - active[j]
					c := candidate{entry: i, request: al.Size, free: free, key: k}
					for _, sg := range segs {
						if sg.key == k && sg.size >= al.Size {
							c.segs = append(c.segs, sg)
						}
					}
					slices.SortFunc(c.segs, func(a, b liveSeg) int { return cmp.Compare(a.addr, b.addr) })
					cands = append(cands, c)
					bytes += e.Size
				}
				break
			}
			segs[e.Addr] = liveSeg{addr: e.Addr, size: e.Size, key: k}
			reserved[id(k)] += e.Size
		case snapshot.ActionSegmentFree:
			if sg, ok := segs[e.Addr]; ok {
				reserved[id(sg.key)] -= sg.size
				delete(segs, e.Addr)
			}
		}
	}
	if len(cands) == 0 {
		return Finding{}, false
	}
	hist := r.Stats.Known.History
	f := Finding{Kind: KindAvoidableMalloc, Severity: SeverityWarning, Entry: cands[0].entry, Mode: "contiguity"}
	f.PoolSet, f.Large, f.Pool, f.Stream = true, cands[0].key.large, cands[0].key.pool, cands[0].key.stream
	f.add("avoidable_segment_allocs", int64(len(cands)), Count, hist)
	f.add("avoidable_segment_bytes", bytes, Bytes, hist)
	f.add("segment_allocs", segAllocs, Count, hist)
	f.add("first_entry", int64(cands[0].entry), Entry, stats.Exact)

	// The blockers of the largest requests.
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
	f.add("examined_without_blockers", int64(noSeg), Count, hist)
	if len(groups) > 0 {
		f.Blockers = groupBlockers(r, tr, ats, groups, stranded)
	}
	return f, true
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
