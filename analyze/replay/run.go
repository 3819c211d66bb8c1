package replay

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/internal/addrmap"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

func countAllocs(trace []snapshot.TraceEntry) int {
	n := 0
	for i := range trace {
		if trace[i].Action == snapshot.ActionAlloc {
			n++
		}
	}
	return n
}

// countActive counts the active blocks of segments.
func countActive(segs []snapshot.Segment) int {
	n := 0
	for k := range segs {
		for j := range segs[k].Blocks {
			if segs[k].Blocks[j].State.Active() {
				n++
			}
		}
	}
	return n
}

// seedState reconstructs the state before the first trace entry by undoing
// the trace, last entry first, from the file's segments. Undoing an alloc
// frees the block and merges it with its free neighbours (which rebuilds
// the free block it was carved from, since free blocks never touch);
// undoing a free_completed carves the block back out of the free block
// holding its address. The size of a block allocated inside the trace does
// not matter there (undoing its alloc merges it away again), so the
// rounded request is used; a block allocated before the trace keeps, in the
// large pool, the room up to the next address an earlier entry touched when
// the allocator would not have split that room off (should_split).
//
// It returns nil when the state before the first entry is empty: the trace
// starts at the allocator's first allocation (or at a moment when nothing
// was reserved).
func (r *Result) seedState(trace []snapshot.TraceEntry) ([]snapshot.Segment, []string) {
	m := newMachine(&r.cfg, mapHint(len(trace)))
	m.load(r.deviceSegments(), r.Device)
	// One pass forwards: the device's Coverage, and which free_completed
	// entries free a block allocated before the trace.
	scan := newCoverageScan(r.snap, r.Device, mapHint(len(trace)))
	preExisting := make([]bool, len(trace))
	for i := range trace {
		preExisting[i] = scan.step(&trace[i])
	}
	r.Coverage = scan.finish()
	if len(trace) == 0 {
		return m.export(r.Device), nil
	}
	var touched touched // built on first use

	for i := len(trace) - 1; i >= 0; i-- {
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionAlloc:
			m.unAlloc(i, e)
		case snapshot.ActionFreeRequested:
			m.unFreeRequested(i, e)
		case snapshot.ActionFreeCompleted:
			m.unFreeCompleted(i, e, func(f1 snapshot.Addr, large, expandable bool) int64 {
				rounded := r.cfg.RoundSize(e.Size)
				if !preExisting[i] || !large || expandable || r.cfg.ExpandableSegments {
					return rounded
				}
				if touched == nil {
					touched = touchedAddrs(trace)
				}
				lim := min(f1, touched.next(e.Addr, f1, i))
				room := int64(lim - e.Addr)
				if room > rounded && !r.cfg.ShouldSplit(false, room, rounded) {
					return room
				}
				return rounded
			})
		case snapshot.ActionSegmentAlloc:
			m.unSegmentAlloc(i, e)
		case snapshot.ActionSegmentFree:
			if _, ok := m.segAt[e.Addr]; ok {
				m.problem("entry %d: segment_free at %v: a segment starts there after it", i, e.Addr)
				continue
			}
			si := m.addSegment(e.Addr, e.Size, e.Stream, allocator.IsLargeSegmentSize(e.Size), false)
			m.segs[si].stack = e.Stack
		case snapshot.ActionSegmentMap:
			start, end := e.Addr, e.Addr+snapshot.Addr(e.Size)
			si := m.segmentContaining(start)
			bi := int32(-1)
			if si >= 0 && m.segs[si].expandable {
				bi = m.blockContaining(si, start)
			}
			if bi < 0 || m.blocks[bi].state != snapshot.StateInactive || m.blocks[bi].end() < end {
				m.problem("entry %d: segment_map at %v (%d bytes): not one free mapped range after it", i, e.Addr, e.Size)
				continue
			}
			m.cut(si, bi, start, end)
		case snapshot.ActionSegmentUnmap:
			m.segmentMap(i, e, expandableLarge(&r.cfg.Config, trace, i, false))
		}
	}
	var problems []string
	for _, p := range m.problems {
		problems = append(problems, "seeding: "+p)
	}
	if m.nproblems > len(m.problems) {
		problems = append(problems, fmt.Sprintf("seeding: and %d more", m.nproblems-len(m.problems)))
	}
	seed := m.export(r.Device)
	if len(seed) == 0 {
		return nil, problems
	}
	return seed, problems
}

// unAlloc undoes an alloc entry: the block becomes free and merges with
// its free neighbours.
func (m *machine) unAlloc(i int, e *snapshot.TraceEntry) {
	bi, ok := m.blockAt.Get(e.Addr)
	if !ok || m.blocks[bi].state != snapshot.StateActiveAllocated {
		m.problem("entry %d: alloc at %v: no allocated block there after it", i, e.Addr)
		return
	}
	b := &m.blocks[bi]
	b.state = snapshot.StateInactive
	b.req, b.stack, b.alloc = 0, snapshot.NoStack, -1
	m.mergeFree(bi)
}

// unFreeRequested undoes a free_requested entry: the block is allocated
// again.
func (m *machine) unFreeRequested(i int, e *snapshot.TraceEntry) {
	bi, ok := m.blockAt.Get(e.Addr)
	if !ok || m.blocks[bi].state != snapshot.StateActivePendingFree {
		m.problem("entry %d: free_requested at %v: no block pending free there after it", i, e.Addr)
		return
	}
	m.blocks[bi].state = snapshot.StateActiveAllocated
}

// unFreeCompleted undoes a free_completed entry: the block, size(end of the
// free block, pool) bytes, is carved back out of the free block holding its
// address and is pending free again.
func (m *machine) unFreeCompleted(i int, e *snapshot.TraceEntry, size func(f1 snapshot.Addr, large, expandable bool) int64) {
	// Most often a free block starts at the address (the freed block had
	// no free block before it): its segment is the one holding the
	// address, as blocks of live segments alone are indexed.
	si, bi := int32(-1), int32(-1)
	if b, ok := m.blockAt.Get(e.Addr); ok {
		si, bi = m.blocks[b].seg, b
	} else if si = m.segmentContaining(e.Addr); si >= 0 {
		bi = m.blockContaining(si, e.Addr)
	}
	if bi < 0 || m.blocks[bi].state != snapshot.StateInactive {
		m.problem("entry %d: free_completed at %v: no free block holds it after it", i, e.Addr)
		return
	}
	f1 := m.blocks[bi].end()
	sz := size(f1, m.segs[si].large, m.segs[si].expandable)
	if room := int64(f1 - e.Addr); sz > room {
		m.problem("entry %d: free_completed at %v: block of %d bytes, only %d free there after it", i, e.Addr, sz, room)
		sz = room
	}
	target := bi
	if b := &m.blocks[bi]; b.addr < e.Addr {
		b.size = int64(e.Addr - b.addr)
		nb := m.newBlock()
		m.blocks[nb].addr = e.Addr
		m.insertAfter(si, bi, nb)
		target = nb
	}
	t := &m.blocks[target]
	t.size = sz
	t.state = snapshot.StateActivePendingFree
	if m.cfg.impliedFreeRequested {
		t.state = snapshot.StateActiveAllocated
	}
	t.req = e.Size
	t.stack = snapshot.NoStack
	t.alloc = -1
	if end := e.Addr + snapshot.Addr(sz); end < f1 {
		nb := m.newBlock()
		m.blocks[nb].addr = end
		m.blocks[nb].size = int64(f1 - end)
		m.blocks[nb].state = snapshot.StateInactive
		m.insertAfter(si, target, nb)
	}
}

// unSegmentAlloc undoes a segment_alloc entry: the segment, one free block
// by then, disappears.
func (m *machine) unSegmentAlloc(i int, e *snapshot.TraceEntry) {
	si, ok := m.wholeFreeSegment(i, e, "segment_alloc", " after it")
	if !ok {
		return
	}
	m.removeSegment(si)
}

// touched is the set of addresses that alloc and free_completed entries
// name, each with the first entry naming it, sorted by address.
type touched []touch

type touch struct {
	addr  snapshot.Addr
	first int32
}

func touchedAddrs(trace []snapshot.TraceEntry) touched {
	// The caching allocator hands the same addresses out again and again:
	// keep the first entry of each in a map (a few thousand keys for
	// millions of entries), then sort the distinct addresses.
	first := addrmap.New(mapHint(len(trace)))
	for i := range trace {
		if a := trace[i].Action; a == snapshot.ActionAlloc || a == snapshot.ActionFreeCompleted {
			if _, ok := first.Get(trace[i].Addr); !ok {
				first.Set(trace[i].Addr, int32(i))
			}
		}
	}
	t := make(touched, 0, first.Len())
	for _, s := range first.Slots {
		if s.Used {
			t = append(t, touch{s.Key, s.Val})
		}
	}
	slices.SortFunc(t, func(a, b touch) int { return cmp.Compare(a.addr, b.addr) })
	return t
}

// next returns the lowest address in (addr, limit) that an entry before
// entry i names, or limit.
func (t touched) next(addr, limit snapshot.Addr, i int) snapshot.Addr {
	j, _ := slices.BinarySearchFunc(t, addr+1, func(x touch, a snapshot.Addr) int { return cmp.Compare(x.addr, a) })
	for ; j < len(t) && t[j].addr < limit; j++ {
		if int(t[j].first) < i {
			return t[j].addr
		}
	}
	return limit
}

// expandableLarge guesses the pool of pages an expandable segment maps or
// unmaps at entry i from the allocations around it: the next alloc or oom
// (forward, for a segment_map: map_block runs inside the malloc that
// needs the pages) or the last alloc inside the range (backward). Without
// one, pages of 20 MiB multiples are taken for the large pool.
func expandableLarge(cfg *allocator.Config, trace []snapshot.TraceEntry, i int, forward bool) bool {
	e := &trace[i]
	const window = 4096
	if forward {
		for k := i + 1; k < len(trace) && k <= i+window; k++ {
			switch t := &trace[k]; t.Action {
			case snapshot.ActionAlloc, snapshot.ActionOOM:
				return cfg.IsLargeRequest(t.Size)
			}
		}
	} else {
		end := e.Addr + snapshot.Addr(e.Size)
		for k := i - 1; k >= 0 && k >= i-window; k-- {
			if t := &trace[k]; t.Action == snapshot.ActionAlloc && t.Addr >= e.Addr && t.Addr < end {
				return cfg.IsLargeRequest(t.Size)
			}
		}
	}
	return e.Size%allocator.PageSize(false) == 0
}

// runner replays the trace forward from the seed state.
type runner struct {
	r       *Result
	m       *machine
	trace   []snapshot.TraceEntry
	fileSeg map[snapshot.Addr]*snapshot.Segment // the file's segments of the device
	nallocs int32
	record  bool // fill the series, Allocs and OOMs of r
	// peaks finds r.PeakIndex, r.PeakReservedIndex, r.peaks and r.OOMs
	// without the series.
	peaks bool
	// pools follows the private pools (Result.Pools); nil when the
	// device has none, and in every runner but Run's own.
	pools *poolTrack
	// released is true after a segment_free or segment_unmap entry.
	released bool
}

// deviceSegments returns the file's segments that may be the device's
// (see snapshot.Snapshot.DeviceSegments): callers still check Device.
func (r *Result) deviceSegments() []snapshot.Segment {
	lo, hi := r.snap.DeviceSegments(r.Device)
	return r.snap.Segments[lo:hi]
}

// mapHint is the initial size of an address map for a trace of n entries:
// a few thousand addresses serve millions of entries, and a device with a
// handful of entries should not pay for a thousand (the maps grow).
func mapHint(n int) int { return min(n, 1024) }

// newRunner returns a runner whose tracking machine holds the seed state;
// the seed's active blocks are the first Allocations, in address order.
func (r *Result) newRunner(record bool) *runner {
	x := &runner{r: r, trace: DeviceTrace(r.snap, r.Device), record: record}
	x.m = newMachine(&r.cfg, mapHint(len(x.trace)))
	x.m.track = true
	x.m.load(r.seed, r.Device)
	x.fileSeg = map[snapshot.Addr]*snapshot.Segment{}
	segs := r.deviceSegments()
	for k := range segs {
		if fs := &segs[k]; fs.Device == r.Device {
			x.fileSeg[fs.Address] = fs
		}
	}
	m := x.m
	for _, si := range m.liveSegments() {
		s := &m.segs[si]
		for b := s.head; b >= 0; b = m.blocks[b].next {
			blk := &m.blocks[b]
			if !blk.state.Active() {
				continue
			}
			blk.alloc = x.nallocs
			x.nallocs++
			if record {
				r.Allocs = append(r.Allocs, Allocation{
					Addr: blk.addr, Size: blk.size, Requested: blk.req, Stream: s.stream,
					Pool: s.pool, Large: s.large, Stack: blk.stack,
					AllocIndex: -1, FreeRequested: -1, FreeCompleted: -1,
					FreedBefore: blk.state == snapshot.StateActivePendingFree,
				})
			}
		}
	}
	return x
}

// runTo applies the entries up to and including upto.
func (x *runner) runTo(upto int) {
	for i := 0; i <= upto; i++ {
		x.step(i)
	}
	// Private pool ids of the expandable segments still in the file
	// (trace entries carry none; a segment_alloc takes its pool from the
	// file as it is replayed, a mapped range cannot).
	m := x.m
	for _, si := range m.liveSegments() {
		s := &m.segs[si]
		if fs := x.fileSeg[s.addr]; fs != nil && fs.TotalSize == s.size && s.expandable {
			s.pool = fs.Pool
		}
	}
}

// step applies entry i.
func (x *runner) step(i int) {
	m, r, e := x.m, x.r, &x.trace[i]
	b, segNew := int32(-1), false
	if x.pools != nil {
		x.pools.beforeStep(m, e)
		if e.Action == snapshot.ActionSegmentAlloc {
			_, had := m.segAt[e.Addr]
			segNew = !had
		}
	}
	switch e.Action {
	case snapshot.ActionAlloc:
		if b = m.alloc(i, e, x.nallocs); b >= 0 {
			x.nallocs++
			if x.record {
				blk := &m.blocks[b]
				s := &m.segs[blk.seg]
				r.Allocs = append(r.Allocs, Allocation{
					Addr: blk.addr, Size: blk.size, Requested: blk.req, Stream: s.stream,
					Pool: s.pool, Large: s.large, Stack: blk.stack,
					AllocIndex: i, FreeRequested: -1, FreeCompleted: -1,
				})
			}
		}
	case snapshot.ActionFreeRequested:
		if a := m.freeRequested(i, e); a >= 0 && x.record {
			r.Allocs[a].FreeRequested = i
		}
	case snapshot.ActionFreeCompleted:
		if a := m.freeCompleted(i, e); a >= 0 && x.record {
			r.Allocs[a].FreeCompleted = i
			if r.cfg.impliedFreeRequested {
				r.Allocs[a].FreeRequested = i
			}
		}
	case snapshot.ActionSegmentAlloc:
		x.afterRelease()
		large, pool := r.SegmentAllocPool(x.fileSeg[e.Addr], i, e)
		m.segmentAlloc(i, e, large, pool)
	case snapshot.ActionSegmentFree:
		m.segmentFree(i, e)
	case snapshot.ActionSegmentMap:
		x.afterRelease()
		m.segmentMap(i, e, expandableLarge(&r.cfg.Config, x.trace, i, true))
	case snapshot.ActionSegmentUnmap:
		m.segmentUnmap(i, e)
	case snapshot.ActionAnnotate:
		// No change to the allocator's state: the metadata goes to the
		// allocation live at Addr (the base address of its block).
		if x.record {
			if a := m.allocatedAt(e.Addr); a >= 0 && int(a) < len(r.Allocs) {
				r.Allocs[a].Annotations = append(r.Allocs[a].Annotations, Annotation{Index: i, Metadata: e.UserMetadata})
			}
		}
	case snapshot.ActionOOM:
		// Each OOM implies one cudaMalloc retry (see Result.Stats): the
		// figure at any entry is at least the OOMs so far.
		m.st.NumOOMs++
		m.st.NumAllocRetries++
		m.st.NumAllocRetriesMax++
		if x.record || x.peaks {
			r.OOMs = append(r.OOMs, i)
		}
	}
	x.released = e.Action == snapshot.ActionSegmentFree || e.Action == snapshot.ActionSegmentUnmap
	if x.pools != nil {
		x.pools.afterStep(m, i, e, b, segNew)
	}
	if x.peaks {
		res := m.st.ReservedBytes[stats.PoolAll].Current
		if v := m.st.AllocatedBytes[stats.PoolAll].Current; r.PeakIndex < 0 || v > r.peaks.Allocated {
			r.peaks.Allocated, r.peaks.ReservedAtAllocated, r.PeakIndex = v, res, i
		}
		if r.PeakReservedIndex < 0 || res > r.peaks.Reserved {
			r.peaks.Reserved, r.PeakReservedIndex = res, i
		}
	}
	if x.record {
		r.Allocated[i] = m.st.AllocatedBytes[stats.PoolAll].Current
		if r.Active != nil {
			r.Active[i] = m.st.ActiveBytes[stats.PoolAll].Current
			r.Reserved[i] = m.st.ReservedBytes[stats.PoolAll].Current
			r.Requested[i] = m.st.RequestedBytes[stats.PoolAll].Current
		}
	}
}

// SegmentAllocPool returns the pool of the segment that segment_alloc
// entry i (e) of the device's trace creates: large or small by size (a
// small-pool segment is kSmallBuffer, a large-pool one at least 10 MiB,
// get_allocation_size), or the file's own segment_type when fs, the
// file's segment at e.Addr (nil: none), is that segment (same size, not
// expandable); its private pool (segment_pool_id) only when e is the last
// segment_alloc at the address, as an earlier segment there was freed
// before the dump and its pool is not known (trace entries carry none).
// Every view that needs a segment's pool takes it from here.
func (r *Result) SegmentAllocPool(fs *snapshot.Segment, i int, e *snapshot.TraceEntry) (large bool, pool snapshot.PoolID) {
	large = allocator.IsLargeSegmentSize(e.Size)
	if fs != nil && fs.TotalSize == e.Size && !fs.Expandable {
		large = allocator.IsLargeSegment(fs)
		if last, ok := r.lastPoolAlloc[e.Addr]; !ok || last == i {
			pool = fs.Pool
		}
	}
	return large, pool
}

// endCheck compares the replayed end state with the file's segments.
func (r *Result) endCheck(m *machine, seedProblems []string) EndCheck {
	var c EndCheck
	var diffs []string
	ndiffs := 0
	diff := func(format string, args ...any) {
		ndiffs++
		if len(diffs) < caMaxProblems {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	var file []*snapshot.Segment
	segs := r.deviceSegments()
	for k := range segs {
		if fs := &segs[k]; fs.Device == r.Device {
			file = append(file, fs)
			c.Segments++
			c.Blocks += len(fs.Blocks)
		}
	}
	slices.SortFunc(file, func(a, b *snapshot.Segment) int { return cmp.Compare(a.Address, b.Address) })
	live := m.liveSegments()
	i, j := 0, 0
	for i < len(file) || j < len(live) {
		switch {
		case j == len(live) || (i < len(file) && file[i].Address < m.segs[live[j]].addr):
			diff("segment %v (%d bytes): in the file, not in the replay", file[i].Address, file[i].TotalSize)
			i++
		case i == len(file) || m.segs[live[j]].addr < file[i].Address:
			s := &m.segs[live[j]]
			diff("segment %v (%d bytes): in the replay, not in the file", s.addr, s.size)
			j++
		default:
			compareSegment(m, file[i], live[j], diff)
			i++
			j++
		}
	}
	c.Differences = append(c.Differences, seedProblems...)
	for _, p := range m.problems {
		c.Differences = append(c.Differences, "replay: "+p)
	}
	if m.nproblems > len(m.problems) {
		c.Differences = append(c.Differences, fmt.Sprintf("replay: and %d more", m.nproblems-len(m.problems)))
	}
	c.Differences = append(c.Differences, diffs...)
	if ndiffs > len(diffs) {
		c.Differences = append(c.Differences, fmt.Sprintf("and %d more differences", ndiffs-len(diffs)))
	}
	c.Equal = len(c.Differences) == 0
	if c.Differences == nil {
		c.Differences = []string{}
	}
	return c
}

func compareSegment(m *machine, fs *snapshot.Segment, si int32, diff func(string, ...any)) {
	s := &m.segs[si]
	if fs.TotalSize != s.size || fs.Stream != s.stream || allocator.IsLargeSegment(fs) != s.large || fs.Expandable != s.expandable {
		diff("segment %v: file has %d bytes, stream %#x, large %t, expandable %t; replay has %d bytes, stream %#x, large %t, expandable %t",
			fs.Address, fs.TotalSize, fs.Stream, allocator.IsLargeSegment(fs), fs.Expandable, s.size, s.stream, s.large, s.expandable)
	}
	k := 0
	b := s.head
	for ; k < len(fs.Blocks) && b >= 0; k, b = k+1, m.blocks[b].next {
		fb, rb := &fs.Blocks[k], &m.blocks[b]
		state := fb.State
		if state == snapshot.StateUnknown {
			state = snapshot.StateInactive
		}
		switch {
		case fb.Address != rb.addr || fb.Size != rb.size || state != rb.state:
			diff("segment %v block %d: file has %v %d bytes %v; replay has %v %d bytes %v",
				fs.Address, k, fb.Address, fb.Size, fb.State, rb.addr, rb.size, rb.state)
			return
		case state.Active() && fb.RequestedSize != rb.req:
			diff("segment %v block %v: file has requested size %d; replay has %d", fs.Address, fb.Address, fb.RequestedSize, rb.req)
		}
	}
	if k < len(fs.Blocks) || b >= 0 {
		diff("segment %v: file has %d blocks; replay has %d", fs.Address, len(fs.Blocks), s.nblocks)
	}
}

// finalStats returns the memory_stats() figures after the last entry with
// their exactness.
func (r *Result) finalStats(m *machine) stats.MemoryStats {
	st := m.st
	st.Device = r.Device
	st.MaxSplitSize = -1
	if set := r.snap.Settings; set != nil && set.MaxSplitSize > 0 {
		st.MaxSplitSize = set.MaxSplitSize
	}
	if !r.Check.Equal {
		// Current figures come from the file's segments, which torch's
		// current figures equal.
		f := newMachine(&r.cfg, mapHint(len(DeviceTrace(r.snap, r.Device))))
		f.track = true
		f.load(r.deviceSegments(), r.Device)
		cur := f.st
		setCurrent := func(dst, src *stats.Stat) {
			dst.Current = src.Current
			dst.Peak = max(dst.Peak, dst.Current)
		}
		srcFams, dstFams := cur.PooledFamilies(), st.PooledFamilies()
		for k := range dstFams {
			for p := range stats.NumPools {
				setCurrent(&dstFams[k].Stat[p], &srcFams[k].Stat[p])
			}
		}
		setCurrent(&st.OversizeAllocations, &cur.OversizeAllocations)
		setCurrent(&st.OversizeSegments, &cur.OversizeSegments)
	}
	return st
}

// afterRelease counts a segment_alloc or segment_map that follows
// segment_free or segment_unmap entries directly: it may end a cudaMalloc
// retry that succeeded (malloc: alloc_block fails, release_cached_blocks
// frees every unsplit cached block, alloc_block(isRetry) succeeds, in
// c10/cuda/CUDACachingAllocator.cpp), or a release_available_cached_blocks,
// a garbage collection or an empty_cache() before a cudaMalloc. A retry
// that succeeds frees something first (else the second cudaMalloc would
// fail as the first did), and a retry that fails ends in an oom entry, so
// the OOMs plus these bound num_alloc_retries from above
// (MemoryStats.NumAllocRetriesMax).
func (x *runner) afterRelease() {
	if x.released {
		x.m.st.NumAllocRetriesMax++
	}
}
