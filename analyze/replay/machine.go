package replay

import (
	"fmt"
	"maps"
	"slices"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/internal/addrmap"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// caMaxProblems caps the inconsistencies a replay keeps as text.
const caMaxProblems = 20

// mBlock is one block of the replayed state. Blocks live in machine.blocks
// and link to their neighbours in the segment by index (-1: none).
type mBlock struct {
	addr       snapshot.Addr
	size       int64
	req        int64 // requested size of an active block
	prev, next int32
	seg        int32
	alloc      int32 // index into Result.Allocs of an active block, -1
	stack      snapshot.StackID
	state      snapshot.BlockState
}

func (b *mBlock) end() snapshot.Addr { return b.addr + snapshot.Addr(b.size) }

// mSeg is one segment of the replayed state: a cudaMalloc, or a contiguous
// mapped run of an expandable segment.
type mSeg struct {
	addr       snapshot.Addr
	size       int64
	stream     uint64
	pool       snapshot.PoolID
	stack      snapshot.StackID
	head, tail int32
	nblocks    int32
	large      bool
	expandable bool
	live       bool
}

func (s *mSeg) end() snapshot.Addr { return s.addr + snapshot.Addr(s.size) }

// machine is the replayed allocator state of one device, with the
// memory_stats() figures when track is set. Inconsistencies between the
// trace and the state are collected in problems, never fatal.
type machine struct {
	cfg *replayConfig

	blocks []mBlock
	freeB  []int32
	segs   []mSeg
	freeS  []int32

	blockAt addrmap.Map             // every block by start address
	segAt   map[snapshot.Addr]int32 // every live segment by start address
	segEnd  map[snapshot.Addr]int32 // expandable segments by end address

	sorted      []int32 // live segments by address, rebuilt when dirty
	sortedDirty bool

	track bool
	st    stats.MemoryStats

	problems  []string
	nproblems int
}

func newMachine(cfg *replayConfig, sizeHint int) *machine {
	return &machine{
		cfg:         cfg,
		blockAt:     addrmap.New(sizeHint),
		segAt:       make(map[snapshot.Addr]int32),
		segEnd:      make(map[snapshot.Addr]int32),
		sortedDirty: true,
	}
}

func (m *machine) problem(format string, args ...any) {
	m.nproblems++
	if len(m.problems) < caMaxProblems {
		m.problems = append(m.problems, fmt.Sprintf(format, args...))
	}
}

// newBlock returns the index of a fresh block. It may grow m.blocks, so
// pointers into it must be taken again afterwards.
func (m *machine) newBlock() int32 {
	if n := len(m.freeB); n > 0 {
		i := m.freeB[n-1]
		m.freeB = m.freeB[:n-1]
		m.blocks[i] = mBlock{prev: -1, next: -1, alloc: -1}
		return i
	}
	m.blocks = append(m.blocks, mBlock{prev: -1, next: -1, alloc: -1})
	return int32(len(m.blocks) - 1)
}

func (m *machine) newSeg() int32 {
	m.sortedDirty = true
	if n := len(m.freeS); n > 0 {
		i := m.freeS[n-1]
		m.freeS = m.freeS[:n-1]
		m.segs[i] = mSeg{head: -1, tail: -1, live: true}
		return i
	}
	m.segs = append(m.segs, mSeg{head: -1, tail: -1, live: true})
	return int32(len(m.segs) - 1)
}

// Stat updates, as increase_stat / decrease_stat on the "all" row and the
// block's pool row (get_stat_types_for_pool).

func (m *machine) inc(f *[stats.NumPools]stats.Stat, large bool, n int64) {
	if !m.track {
		return
	}
	incStat(&f[stats.PoolAll], n)
	incStat(&f[poolRow(large)], n)
}

func (m *machine) dec(f *[stats.NumPools]stats.Stat, large bool, n int64) {
	if !m.track {
		return
	}
	decStat(&f[stats.PoolAll], n)
	decStat(&f[poolRow(large)], n)
}

func poolRow(large bool) stats.Pool {
	if large {
		return stats.PoolLarge
	}
	return stats.PoolSmall
}

func incStat(s *stats.Stat, n int64) {
	s.Current += n
	s.Peak = max(s.Peak, s.Current)
	s.Allocated += n
}

func decStat(s *stats.Stat, n int64) {
	s.Current -= n
	s.Freed += n
}

// insertAfter links block b into segment si after block after (-1: at the
// head).
func (m *machine) insertAfter(si, after, b int32) {
	s := &m.segs[si]
	blk := &m.blocks[b]
	blk.seg = si
	blk.prev = after
	if after < 0 {
		blk.next = s.head
		s.head = b
	} else {
		blk.next = m.blocks[after].next
		m.blocks[after].next = b
	}
	if blk.next >= 0 {
		m.blocks[blk.next].prev = b
	} else {
		s.tail = b
	}
	s.nblocks++
	m.blockAt.Set(blk.addr, b)
}

// unlink removes block b from its segment and frees it.
func (m *machine) unlink(b int32) {
	blk := &m.blocks[b]
	s := &m.segs[blk.seg]
	if blk.prev >= 0 {
		m.blocks[blk.prev].next = blk.next
	} else {
		s.head = blk.next
	}
	if blk.next >= 0 {
		m.blocks[blk.next].prev = blk.prev
	} else {
		s.tail = blk.prev
	}
	s.nblocks--
	m.blockAt.DelIf(blk.addr, b)
	m.freeB = append(m.freeB, b)
}

// mergeFree merges the inactive neighbours of block b into it
// (try_merge_blocks, previous neighbour first) and returns the number of
// blocks and bytes subsumed.
func (m *machine) mergeFree(b int32) (n int, bytes int64) {
	if p := m.blocks[b].prev; p >= 0 && m.blocks[p].state == snapshot.StateInactive {
		sz := m.blocks[p].size
		addr := m.blocks[p].addr
		m.unlink(p)
		blk := &m.blocks[b]
		m.blockAt.Del(blk.addr)
		blk.addr = addr
		blk.size += sz
		m.blockAt.Set(addr, b)
		n, bytes = n+1, bytes+sz
	}
	if nx := m.blocks[b].next; nx >= 0 && m.blocks[nx].state == snapshot.StateInactive {
		sz := m.blocks[nx].size
		m.unlink(nx)
		m.blocks[b].size += sz
		n, bytes = n+1, bytes+sz
	}
	return n, bytes
}

// alloc applies an alloc entry (alloc_found_block): the block is carved
// from the front of the free block at e.Addr. allocIdx is the new
// Allocation's index. It returns the block, or -1 when the state has no
// free block there.
func (m *machine) alloc(i int, e *snapshot.TraceEntry, allocIdx int32) int32 {
	bi, ok := m.blockAt.Get(e.Addr)
	if !ok || m.blocks[bi].state != snapshot.StateInactive {
		m.problem("entry %d: alloc at %v: no free block starts there", i, e.Addr)
		return -1
	}
	b := &m.blocks[bi]
	si := b.seg
	s := &m.segs[si]
	if s.stream != e.Stream {
		m.problem("entry %d: alloc at %v on stream %#x: the free block belongs to stream %#x", i, e.Addr, e.Stream, s.stream)
	}
	large, expandable := s.large, s.expandable
	size := m.cfg.RoundSize(e.Size)
	remaining := b.size - size
	if remaining < 0 {
		m.problem("entry %d: alloc at %v: request of %d bytes rounds to %d, more than the free block's %d", i, e.Addr, e.Size, size, b.size)
		size, remaining = b.size, 0
	}
	// should_split; a block of an expandable segment splits like a
	// small-pool one even when the setting was turned off later.
	split := m.cfg.ShouldSplit(!large || expandable, b.size, size)
	alreadySplit := s.nblocks > 1
	target := bi
	if split {
		nb := m.newBlock()
		b = &m.blocks[bi]
		prev := b.prev
		m.blockAt.Del(b.addr)
		m.blocks[nb].addr = b.addr
		m.blocks[nb].size = size
		b.addr += snapshot.Addr(size)
		b.size = remaining
		m.blockAt.Set(b.addr, bi)
		m.insertAfter(si, prev, nb)
		target = nb
		if !expandable {
			if alreadySplit {
				m.dec(&m.st.InactiveSplitBytes, large, size)
			} else {
				m.inc(&m.st.InactiveSplitBytes, large, remaining)
				m.inc(&m.st.InactiveSplit, large, 1)
			}
		}
	} else if alreadySplit && !expandable {
		m.dec(&m.st.InactiveSplitBytes, large, b.size)
		m.dec(&m.st.InactiveSplit, large, 1)
	}
	t := &m.blocks[target]
	t.state = snapshot.StateActiveAllocated
	t.req = e.Size
	t.stack = e.Stack
	t.alloc = allocIdx
	m.inc(&m.st.Allocation, large, 1)
	m.inc(&m.st.AllocatedBytes, large, t.size)
	m.inc(&m.st.Active, large, 1)
	m.inc(&m.st.ActiveBytes, large, t.size)
	m.inc(&m.st.RequestedBytes, large, t.req)
	if m.track && m.cfg.IsOversize(t.size) {
		incStat(&m.st.OversizeAllocations, 1)
	}
	return target
}

// freeRequested applies a free_requested entry (free): the block stops
// being allocated but stays active until free_completed. It returns the
// block's Allocation index, or -1.
func (m *machine) freeRequested(i int, e *snapshot.TraceEntry) int32 {
	bi, ok := m.blockAt.Get(e.Addr)
	if !ok || m.blocks[bi].state != snapshot.StateActiveAllocated {
		m.problem("entry %d: free_requested at %v: no allocated block there", i, e.Addr)
		return -1
	}
	m.releaseAllocated(bi)
	return m.blocks[bi].alloc
}

// allocatedAt returns the Allocation index of the allocated block that
// starts at addr, or -1 when none does. It changes nothing.
func (m *machine) allocatedAt(addr snapshot.Addr) int32 {
	bi, ok := m.blockAt.Get(addr)
	if !ok || m.blocks[bi].state != snapshot.StateActiveAllocated {
		return -1
	}
	return m.blocks[bi].alloc
}

func (m *machine) releaseAllocated(bi int32) {
	b := &m.blocks[bi]
	large := m.segs[b.seg].large
	b.state = snapshot.StateActivePendingFree
	m.dec(&m.st.Allocation, large, 1)
	m.dec(&m.st.AllocatedBytes, large, b.size)
	if m.track && m.cfg.IsOversize(b.size) {
		decStat(&m.st.OversizeAllocations, 1)
	}
}

// freeCompleted applies a free_completed entry (free_block): the block
// becomes inactive and merges with its free neighbours; inactive_split
// changes by the net change in free blocks of a split segment. It returns
// the block's Allocation index, or -1.
func (m *machine) freeCompleted(i int, e *snapshot.TraceEntry) int32 {
	bi, ok := m.blockAt.Get(e.Addr)
	if !ok || !m.blocks[bi].state.Active() {
		m.problem("entry %d: free_completed at %v: no active block there", i, e.Addr)
		return -1
	}
	if m.blocks[bi].state == snapshot.StateActiveAllocated {
		if !m.cfg.impliedFreeRequested {
			m.problem("entry %d: free_completed at %v without free_requested", i, e.Addr)
		}
		m.releaseAllocated(bi)
	}
	b := &m.blocks[bi]
	alloc := b.alloc
	orig, req := b.size, b.req
	b.state = snapshot.StateInactive
	b.req = 0
	b.stack = snapshot.NoStack
	b.alloc = -1
	n, subsumed := m.mergeFree(bi)
	b = &m.blocks[bi]
	s := &m.segs[b.seg]
	large := s.large
	netBlocks, netBytes := -int64(n), -subsumed
	if s.nblocks > 1 {
		netBlocks++
		netBytes += b.size
	}
	if !s.expandable {
		if netBlocks > 0 {
			m.inc(&m.st.InactiveSplit, large, netBlocks)
		} else if netBlocks < 0 {
			m.dec(&m.st.InactiveSplit, large, -netBlocks)
		}
		if netBytes > 0 {
			m.inc(&m.st.InactiveSplitBytes, large, netBytes)
		} else if netBytes < 0 {
			m.dec(&m.st.InactiveSplitBytes, large, -netBytes)
		}
	}
	m.dec(&m.st.Active, large, 1)
	m.dec(&m.st.ActiveBytes, large, orig)
	m.dec(&m.st.RequestedBytes, large, req)
	return alloc
}

// segmentAlloc applies a segment_alloc entry (alloc_block): a new segment
// holding one free block. pool is its private pool id, when known.
func (m *machine) segmentAlloc(i int, e *snapshot.TraceEntry, large bool, pool snapshot.PoolID) {
	if _, ok := m.segAt[e.Addr]; ok {
		m.problem("entry %d: segment_alloc at %v: a segment already starts there", i, e.Addr)
		return
	}
	si := m.addSegment(e.Addr, e.Size, e.Stream, large, false)
	s := &m.segs[si]
	s.pool = pool
	s.stack = e.Stack
	m.inc(&m.st.Segment, large, 1)
	m.inc(&m.st.ReservedBytes, large, e.Size)
	if m.track {
		if m.cfg.IsOversize(e.Size) {
			incStat(&m.st.OversizeSegments, 1)
		}
		m.st.NumDeviceAlloc++
	}
}

// addSegment creates a segment of one free block.
func (m *machine) addSegment(addr snapshot.Addr, size int64, stream uint64, large, expandable bool) int32 {
	si := m.newSeg()
	s := &m.segs[si]
	s.addr, s.size, s.stream, s.large, s.expandable = addr, size, stream, large, expandable
	m.segAt[addr] = si
	if expandable {
		m.segEnd[s.end()] = si
	}
	b := m.newBlock()
	m.blocks[b].addr = addr
	m.blocks[b].size = size
	m.blocks[b].state = snapshot.StateInactive
	m.insertAfter(si, -1, b)
	return si
}

// removeSegment frees segment si and its blocks.
func (m *machine) removeSegment(si int32) {
	s := &m.segs[si]
	for b := s.head; b >= 0; {
		next := m.blocks[b].next
		m.blockAt.DelIf(m.blocks[b].addr, b)
		m.freeB = append(m.freeB, b)
		b = next
	}
	if m.segAt[s.addr] == si {
		delete(m.segAt, s.addr)
	}
	if s.expandable && m.segEnd[s.end()] == si {
		delete(m.segEnd, s.end())
	}
	s.live = false
	m.freeS = append(m.freeS, si)
	m.sortedDirty = true
}

// segmentFree applies a segment_free entry (release_block): the segment,
// one whole free block, is returned to CUDA.
func (m *machine) segmentFree(i int, e *snapshot.TraceEntry) {
	si, ok := m.wholeFreeSegment(i, e, "segment_free", "")
	if !ok {
		return
	}
	s := &m.segs[si]
	large, size := s.large, s.size
	m.removeSegment(si)
	m.dec(&m.st.Segment, large, 1)
	m.dec(&m.st.ReservedBytes, large, size)
	if m.track {
		if m.cfg.IsOversize(size) {
			decStat(&m.st.OversizeSegments, 1)
		}
		m.st.NumDeviceFree++
	}
}

// wholeFreeSegment finds the non-expandable segment that entry i
// (segment_free, or a segment_alloc being undone) names, and reports a
// problem when it is not one free block of the entry's size, as
// release_block requires. when qualifies the messages (" after it" while
// undoing). ok is false when no such segment exists.
func (m *machine) wholeFreeSegment(i int, e *snapshot.TraceEntry, action, when string) (si int32, ok bool) {
	si, ok = m.segAt[e.Addr]
	if !ok || m.segs[si].expandable {
		where := "no segment starts there"
		if when != "" {
			where = "no segment there" + when
		}
		m.problem("entry %d: %s at %v: %s", i, action, e.Addr, where)
		return 0, false
	}
	s := &m.segs[si]
	if s.nblocks != 1 || m.blocks[s.head].state != snapshot.StateInactive || s.size != e.Size {
		m.problem("entry %d: %s at %v: the segment (%d bytes, %d blocks) is not one free block of %d bytes%s", i, action, e.Addr, s.size, s.nblocks, e.Size, when)
	}
	return si, true
}

// segmentMap applies a segment_map entry (map_block): pages mapped at
// e.Addr join the mapped runs around them and merge with free neighbours.
// large is the pool of a run that has no neighbour.
func (m *machine) segmentMap(i int, e *snapshot.TraceEntry, large bool) {
	start, end := e.Addr, e.Addr+snapshot.Addr(e.Size)
	left, hasLeft := m.segEnd[start]
	if hasLeft && m.segs[left].stream != e.Stream {
		hasLeft = false
	}
	right, hasRight := m.segAt[end]
	if hasRight && (!m.segs[right].expandable || m.segs[right].stream != e.Stream) {
		hasRight = false
	}
	var si int32
	switch {
	case hasLeft:
		si = left
		large = m.segs[si].large
		delete(m.segEnd, start)
		b := m.newBlock()
		m.blocks[b].addr = start
		m.blocks[b].size = e.Size
		m.blocks[b].state = snapshot.StateInactive
		m.insertAfter(si, m.segs[si].tail, b)
		m.segs[si].size += e.Size
		m.segEnd[end] = si
		m.mergeFree(b)
	default:
		if hasRight {
			large = m.segs[right].large
		}
		si = m.addSegment(start, e.Size, e.Stream, large, true)
		m.segs[si].stack = e.Stack
	}
	if hasRight {
		m.joinRight(si, right)
	}
	m.inc(&m.st.ReservedBytes, large, e.Size)
	if m.track {
		m.st.NumDeviceAlloc++
	}
}

// joinRight appends the blocks of expandable segment r to segment si,
// which ends where r starts, and merges the free blocks that meet.
func (m *machine) joinRight(si, r int32) {
	s, rs := &m.segs[si], &m.segs[r]
	delete(m.segEnd, s.end())
	delete(m.segAt, rs.addr)
	delete(m.segEnd, rs.end())
	for b := rs.head; b >= 0; b = m.blocks[b].next {
		m.blocks[b].seg = si
	}
	first := rs.head
	if s.tail >= 0 {
		m.blocks[s.tail].next = rs.head
		m.blocks[rs.head].prev = s.tail
	} else {
		s.head = rs.head
	}
	s.tail = rs.tail
	s.nblocks += rs.nblocks
	s.size += rs.size
	m.segEnd[s.end()] = si
	rs.live = false
	rs.head, rs.tail, rs.nblocks = -1, -1, 0
	m.freeS = append(m.freeS, r)
	m.sortedDirty = true
	if m.blocks[first].state == snapshot.StateInactive {
		m.mergeFree(first)
	}
}

// segmentUnmap applies a segment_unmap entry (unmap_block): pages inside
// one free block are unmapped, splitting its mapped run in two.
func (m *machine) segmentUnmap(i int, e *snapshot.TraceEntry) {
	start, end := e.Addr, e.Addr+snapshot.Addr(e.Size)
	si := m.segmentContaining(start)
	if si < 0 || !m.segs[si].expandable {
		m.problem("entry %d: segment_unmap at %v: no expandable segment holds it", i, e.Addr)
		return
	}
	bi := m.blockContaining(si, start)
	if bi < 0 || m.blocks[bi].state != snapshot.StateInactive || m.blocks[bi].end() < end {
		m.problem("entry %d: segment_unmap at %v (%d bytes): not inside one free block", i, e.Addr, e.Size)
		return
	}
	large := m.segs[si].large
	m.cut(si, bi, start, end)
	m.dec(&m.st.ReservedBytes, large, e.Size)
	if m.track {
		m.st.NumDeviceFree++
	}
}

// cut removes [start, end) from free block bi of segment si, leaving the
// blocks before it in si and those after it in a new segment.
func (m *machine) cut(si, bi int32, start, end snapshot.Addr) {
	b := &m.blocks[bi]
	bEnd := b.end()
	var leftTail int32
	rightHead := b.next
	if b.addr < start {
		b.size = int64(start - b.addr)
		leftTail = bi
	} else {
		leftTail = b.prev
		m.unlink(bi)
	}
	if end < bEnd {
		nb := m.newBlock()
		m.blocks[nb].addr = end
		m.blocks[nb].size = int64(bEnd - end)
		m.blocks[nb].state = snapshot.StateInactive
		after := leftTail
		m.insertAfter(si, after, nb)
		rightHead = nb
	}
	s := &m.segs[si]
	oldEnd := s.end()
	delete(m.segEnd, oldEnd)
	switch {
	case leftTail < 0 && rightHead < 0:
		s.head, s.tail = -1, -1
		m.removeSegment(si)
	case leftTail < 0:
		// Only the right part remains: move the segment's start.
		delete(m.segAt, s.addr)
		s.addr = end
		s.size = int64(oldEnd - end)
		m.segAt[s.addr] = si
		m.segEnd[oldEnd] = si
		m.sortedDirty = true
	case rightHead < 0:
		s.size = int64(start - s.addr)
		m.segEnd[s.end()] = si
	default:
		// Split the list between leftTail and rightHead.
		oldTail := s.tail
		var n int32
		for b := s.head; b >= 0 && b != rightHead; b = m.blocks[b].next {
			n++
		}
		total := s.nblocks
		s.tail = leftTail
		m.blocks[leftTail].next = -1
		s.nblocks = n
		s.size = int64(start - s.addr)
		m.segEnd[s.end()] = si
		stream, large, pool := s.stream, s.large, s.pool
		r := m.newSeg()
		rs := &m.segs[r]
		rs.addr, rs.size, rs.stream, rs.large, rs.pool, rs.expandable = end, int64(oldEnd-end), stream, large, pool, true
		rs.head, rs.tail, rs.nblocks = rightHead, oldTail, total-n
		m.blocks[rightHead].prev = -1
		for b := rightHead; b >= 0; b = m.blocks[b].next {
			m.blocks[b].seg = r
		}
		m.segAt[end] = r
		m.segEnd[oldEnd] = r
	}
}

// segmentContaining returns the live segment holding addr, or -1.
func (m *machine) segmentContaining(addr snapshot.Addr) int32 {
	if m.sortedDirty {
		m.sorted = m.sorted[:0]
		for i := range m.segs {
			if m.segs[i].live {
				m.sorted = append(m.sorted, int32(i))
			}
		}
		slices.SortFunc(m.sorted, func(a, b int32) int {
			if m.segs[a].addr < m.segs[b].addr {
				return -1
			}
			if m.segs[a].addr > m.segs[b].addr {
				return 1
			}
			return 0
		})
		m.sortedDirty = false
	}
	// First segment starting after addr, then step back.
	j, hi := 0, len(m.sorted)
	for j < hi {
		h := int(uint(j+hi) >> 1)
		if m.segs[m.sorted[h]].addr <= addr {
			j = h + 1
		} else {
			hi = h
		}
	}
	if j == 0 {
		return -1
	}
	si := m.sorted[j-1]
	if s := &m.segs[si]; s.addr <= addr && addr < s.end() {
		return si
	}
	return -1
}

// blockContaining returns the block of segment si that holds addr, or -1.
func (m *machine) blockContaining(si int32, addr snapshot.Addr) int32 {
	if b, ok := m.blockAt.Get(addr); ok && m.blocks[b].seg == si {
		return b
	}
	for b := m.segs[si].head; b >= 0; b = m.blocks[b].next {
		if m.blocks[b].addr <= addr && addr < m.blocks[b].end() {
			return b
		}
	}
	return -1
}

// load builds the state from segments (the file's, or a seed) of one
// device, and, when tracking, the memory_stats() current figures they
// imply: each Stat starts with Peak and Allocated equal to Current.
func (m *machine) load(segs []snapshot.Segment, device int) {
	for k := range segs {
		fs := &segs[k]
		if fs.Device != device {
			continue
		}
		si := m.newSeg()
		s := &m.segs[si]
		s.addr, s.size, s.stream = fs.Address, fs.TotalSize, fs.Stream
		s.large, s.expandable, s.pool, s.stack = allocator.IsLargeSegment(fs), fs.Expandable, fs.Pool, fs.Stack
		m.segAt[s.addr] = si
		if s.expandable {
			m.segEnd[s.end()] = si
		}
		prev := int32(-1)
		for j := range fs.Blocks {
			fb := &fs.Blocks[j]
			b := m.newBlock()
			blk := &m.blocks[b]
			blk.addr, blk.size, blk.stack = fb.Address, fb.Size, fb.Stack
			blk.state = fb.State
			if blk.state == snapshot.StateUnknown {
				blk.state = snapshot.StateInactive
			}
			if blk.state.Active() {
				blk.req = fb.RequestedSize
			} else {
				blk.stack = snapshot.NoStack
			}
			m.insertAfter(si, prev, b)
			prev = b
		}
	}
	if !m.track {
		return
	}
	var st stats.MemoryStats
	for si := range m.segs {
		s := &m.segs[si]
		if !s.live {
			continue
		}
		add := func(f *[stats.NumPools]stats.Stat, n int64) {
			f[stats.PoolAll].Current += n
			f[poolRow(s.large)].Current += n
		}
		add(&st.ReservedBytes, s.size)
		if !s.expandable {
			add(&st.Segment, 1)
			if m.cfg.IsOversize(s.size) {
				st.OversizeSegments.Current++
			}
		}
		for b := s.head; b >= 0; b = m.blocks[b].next {
			blk := &m.blocks[b]
			switch blk.state {
			case snapshot.StateActiveAllocated:
				add(&st.Allocation, 1)
				add(&st.AllocatedBytes, blk.size)
				if m.cfg.IsOversize(blk.size) {
					st.OversizeAllocations.Current++
				}
				fallthrough
			case snapshot.StateActivePendingFree:
				add(&st.Active, 1)
				add(&st.ActiveBytes, blk.size)
				add(&st.RequestedBytes, blk.req)
			case snapshot.StateInactive:
				if !s.expandable && s.nblocks > 1 {
					add(&st.InactiveSplit, 1)
					add(&st.InactiveSplitBytes, blk.size)
				}
			}
		}
	}
	for _, f := range st.PooledFamilies() {
		for p := range f.Stat {
			startStat(&f.Stat[p])
		}
	}
	startStat(&st.OversizeAllocations)
	startStat(&st.OversizeSegments)
	// Each segment already there was mapped or cudaMalloc'd at least once.
	st.NumDeviceAlloc = int64(len(m.segAt))
	m.st = st
}

// startStat makes a current value the start of a history: the peak and the
// cumulative allocations are at least the current value.
func startStat(s *stats.Stat) {
	s.Peak = s.Current
	s.Allocated = s.Current
}

// liveSegments returns the live segments in address order.
func (m *machine) liveSegments() []int32 {
	m.segmentContaining(0) // rebuild m.sorted
	return m.sorted
}

// export returns the state as snapshot segments (the seed format), with
// the file-reported sums filled in.
func (m *machine) export(device int) []snapshot.Segment {
	live := m.liveSegments()
	out := make([]snapshot.Segment, 0, len(live))
	for _, si := range live {
		s := &m.segs[si]
		typ := "small"
		if s.large {
			typ = "large"
		}
		fs := snapshot.Segment{
			Device: device, Address: s.addr, TotalSize: s.size, Stream: s.stream,
			Type: typ, Pool: s.pool, Expandable: s.expandable, Stack: s.stack,
			Blocks: make([]snapshot.Block, 0, s.nblocks),
		}
		for b := s.head; b >= 0; b = m.blocks[b].next {
			blk := &m.blocks[b]
			fs.Blocks = append(fs.Blocks, snapshot.Block{
				Address: blk.addr, Size: blk.size, RequestedSize: blk.req,
				State: blk.state, Stack: blk.stack,
			})
			if blk.state == snapshot.StateActiveAllocated {
				fs.AllocatedSize += blk.size
			}
			if blk.state.Active() {
				fs.ActiveSize += blk.size
				fs.RequestedSize += blk.req
			}
		}
		out = append(out, fs)
	}
	return out
}

// copyFrom makes m a copy of src that shares nothing mutable with it (the
// configuration is shared: it does not change), reusing m's memory.
func (m *machine) copyFrom(src *machine) {
	m.cfg = src.cfg
	m.blocks = append(m.blocks[:0], src.blocks...)
	m.freeB = append(m.freeB[:0], src.freeB...)
	m.segs = append(m.segs[:0], src.segs...)
	m.freeS = append(m.freeS[:0], src.freeS...)
	m.blockAt.Slots = append(m.blockAt.Slots[:0], src.blockAt.Slots...)
	m.blockAt.Shift, m.blockAt.N = src.blockAt.Shift, src.blockAt.N
	if m.segAt == nil {
		m.segAt = make(map[snapshot.Addr]int32, len(src.segAt))
		m.segEnd = make(map[snapshot.Addr]int32, len(src.segEnd))
	}
	clear(m.segAt)
	maps.Copy(m.segAt, src.segAt)
	clear(m.segEnd)
	maps.Copy(m.segEnd, src.segEnd)
	m.sorted = append(m.sorted[:0], src.sorted...)
	m.sortedDirty = src.sortedDirty
	m.track, m.st = src.track, src.st
	m.problems = append(m.problems[:0], src.problems...)
	m.nproblems = src.nproblems
}

// footprint is the number of elements copyFrom copies, a measure of its
// cost.
func (m *machine) footprint() int {
	return len(m.blocks) + len(m.freeB) + len(m.segs) + len(m.freeS) + len(m.blockAt.Slots) + 2*len(m.segAt) + 2*len(m.segEnd) + len(m.sorted)
}
