package whatif

import (
	"cmp"
	"math"
	"slices"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/snapshot"
)

// Block states of the simulation.
const (
	stFree      uint8 = iota // in its pool (inactive), or unmapped
	stAllocated              // active_allocated
	stPending                // active_pending_free: freed, waiting for free_completed
)

// sblock is one block of the simulated state (Block of
// CUDACachingAllocator.cpp). Blocks live in sim.blocks and link to their
// neighbours by index (-1: none).
type sblock struct {
	addr       uint64
	size       int64
	stream     uint64
	gcBase     int64 // gc_count_base
	prev, next int32
	es         int32 // expandable segment, -1 for a cudaMalloc'd one
	id         int32 // request id while active
	pool       int16 // index into sim.pools
	state      uint8
	mapped     bool
}

// bkey orders a pool's free blocks as BlockComparatorSize does: stream,
// size, address (then the block index, which only separates equal keys).
type bkey struct {
	stream uint64
	size   int64
	addr   uint64
	b      int32
}

// bpool is a BlockPool: the free mapped blocks by size and the unmapped
// ranges of expandable segments by address.
type bpool struct {
	blocks       freeSet
	unmapped     freeSet
	small        bool
	getFreeCalls int64 // get_free_blocks_call_count
}

// expSeg is an ExpandableSegment: a reservation of address space mapped
// page by page.
type expSeg struct {
	base uint64
	page int64
}

// segEvent is a segment_alloc, segment_free, segment_map or segment_unmap
// the simulation performs.
type segEvent struct {
	action snapshot.Action
	addr   uint64
	size   int64
	es     int32
}

// observer receives what the simulation does, for the self-check.
type observer interface {
	// segment is called for each segment the simulation allocates,
	// frees, maps or unmaps.
	segment(ev segEvent)
	// done is called after op o; ok is false when its request failed, b
	// is the block that serves it.
	done(o *op, ok bool, b int32)
}

// Outcome is what one simulation predicts.
type Outcome struct {
	// PeakReserved and PeakAllocated are reserved_bytes.all.peak and
	// allocated_bytes.all.peak, bytes.
	PeakReserved, PeakAllocated int64
	// GapAtPeak is reserved minus allocated bytes when reserved first
	// reached its peak, once the request that raised it was served.
	GapAtPeak int64
	// GapAtAllocPeak is reserved minus allocated bytes when allocated
	// first reached its peak.
	GapAtAllocPeak int64
	// DeviceAllocs counts cudaMalloc calls and expandable-segment page
	// mappings (num_device_alloc).
	DeviceAllocs int64
	// AllocRetries is num_alloc_retries: cudaMalloc retried after
	// release_cached_blocks.
	AllocRetries int64
	// OOMs counts the requests that failed.
	OOMs int
	// FirstOOM is the trace entry of the first failed request, -1 when
	// none failed.
	FirstOOM int
	// Stopped is true when a request the run served failed here: the run
	// would have raised OutOfMemoryError at FirstOOM, so the simulation
	// stops there.
	Stopped bool
}

// sim is the simulated DeviceCachingAllocator of one device.
type sim struct {
	cfg   allocator.Config
	limit int64 // allowed_memory_maximum; 0 when no fraction is set
	gcOn  bool
	prog  *program
	obs   observer

	blocks []sblock
	freeB  []int32
	pools  []bpool // 0 large, 1 small (default); then 2 per private pool
	es     []expSeg

	blockOf  []int32 // request id -> block, -1 when not active
	pending  []int32 // request ids freed and not yet free_completed, in order
	npending int     // how many of pending still are

	reserved, allocated int64
	out                 Outcome
	newPeak             bool // reserved peaked since the last served request

	nextSynthetic uint64
	nextMalloc    int  // index into prog.segEntries of the next segment_alloc to borrow an address from
	offTrace      bool // a cudaMalloc did not match the trace's: addresses are simulated from then on

	// ckptOn asks run to keep, in ckpt, a copy of the state before the
	// first request the cap could change (op ckptOp): the start of a
	// search over higher caps (searchCap).
	ckptOn bool
	ckpt   *sim
	ckptOp int
	steps  int64 // ops simulated
}

const (
	syntheticBase  = 1 << 53 // simulated cudaMalloc addresses grow down from here
	expandableBase = 1 << 56 // simulated expandable segments, 2^44 bytes apart
	expandableSpan = 1 << 44
	// vaSize is the address space of one expandable segment (torch
	// reserves 1 1/8 of the device's memory; the size only matters to a
	// run that maps more than that).
	vaSize = 1 << 40
	// maxRequest is the largest request simulated (256 TiB): larger ones
	// fail.
	maxRequest = 1 << 48
)

func newSim(p *program, cfg allocator.Config, limit int64, obs observer) *sim {
	s := &sim{cfg: cfg, limit: limit, prog: p, obs: obs, nextSynthetic: syntheticBase}
	s.gcOn = limit > 0 && cfg.GarbageCollectionThreshold > 0
	s.pools = make([]bpool, 2+2*p.npools)
	for i := range s.pools {
		s.pools[i] = bpool{small: i%2 == 1, unmapped: freeSet{byAddr: true}}
	}
	s.blockOf = make([]int32, p.nids)
	for i := range s.blockOf {
		s.blockOf[i] = -1
	}
	s.out.FirstOOM = -1
	s.load()
	return s
}

// poolIndex is the pool of a rounded request (get_pool): private pool
// private (0: the default pools).
func poolIndex(private int16, rounded int64) int16 {
	i := 2 * private
	if allocator.IsSmall(rounded) {
		i++
	}
	return i
}

func (s *sim) newBlock(addr uint64, size int64, stream uint64, pool int16, es int32) int32 {
	b := sblock{addr: addr, size: size, stream: stream, pool: pool, es: es, prev: -1, next: -1, id: -1, mapped: true}
	if n := len(s.freeB); n > 0 {
		i := s.freeB[n-1]
		s.freeB = s.freeB[:n-1]
		s.blocks[i] = b
		return i
	}
	s.blocks = append(s.blocks, b)
	return int32(len(s.blocks) - 1)
}

func (s *sim) deleteBlock(b int32) { s.freeB = append(s.freeB, b) }

func (s *sim) key(b int32) bkey {
	x := &s.blocks[b]
	return bkey{stream: x.stream, size: x.size, addr: x.addr, b: b}
}

// insertFree is BlockPool::insert_into_blocks.
func (s *sim) insertFree(b int32) {
	x := &s.blocks[b]
	p := &s.pools[x.pool]
	x.gcBase = p.getFreeCalls
	p.blocks.Insert(s.key(b))
}

func (s *sim) removeFree(b int32) { s.pools[s.blocks[b].pool].blocks.Delete(s.key(b)) }

func (s *sim) insertUnmapped(b int32) {
	k := s.key(b)
	k.size = 0
	s.pools[s.blocks[b].pool].unmapped.Insert(k)
}

func (s *sim) removeUnmapped(b int32) {
	k := s.key(b)
	k.size = 0
	s.pools[s.blocks[b].pool].unmapped.Delete(k)
}

func (s *sim) isSplit(b int32) bool { return s.blocks[b].prev >= 0 || s.blocks[b].next >= 0 }

func (s *sim) addReserved(n int64) {
	s.reserved += n
	if s.reserved > s.out.PeakReserved {
		s.out.PeakReserved = s.reserved
		s.out.GapAtPeak = s.reserved - s.allocated
		s.newPeak = true
	}
}

func (s *sim) addAllocated(n int64) {
	s.allocated += n
	if s.allocated > s.out.PeakAllocated {
		s.out.PeakAllocated = s.allocated
		s.out.GapAtAllocPeak = s.reserved - s.allocated
	}
}

// load builds the state before the first entry from the program's seed.
// The mapped runs of expandable segments of one stream and pool whose
// gaps are whole pages join one reservation, the gaps and the space after
// the last run unmapped (the file lists only mapped runs; the space before
// the first is unknown and left out).
func (s *sim) load() {
	k := 0
	type resKey struct {
		stream uint64
		pool   int16
	}
	last := map[resKey]int32{} // the last block of each open reservation
	var tails []int32
	for si := range s.prog.seed {
		sg := &s.prog.seed[si]
		pool := int16(0)
		if !allocator.IsLargeSegment(sg) {
			pool = 1
		}
		es := int32(-1)
		prev := int32(-1)
		if sg.Expandable {
			page := allocator.PageSize(pool == 1)
			rk := resKey{sg.Stream, pool}
			if lb, ok := last[rk]; ok {
				end := s.blocks[lb].addr + uint64(s.blocks[lb].size)
				if gap := int64(uint64(sg.Address) - end); uint64(sg.Address) >= end && gap%page == 0 {
					es, prev = s.blocks[lb].es, lb
					if gap > 0 {
						g := s.newBlock(end, gap, sg.Stream, pool, es)
						s.blocks[g].mapped = false
						s.splice(g, lb, -1)
						s.insertUnmapped(g)
						prev = g
					}
				}
			}
			if es < 0 {
				es = int32(len(s.es))
				s.es = append(s.es, expSeg{base: uint64(sg.Address), page: page})
			}
		}
		for j := range sg.Blocks {
			fb := &sg.Blocks[j]
			b := s.newBlock(uint64(fb.Address), fb.Size, sg.Stream, pool, es)
			s.splice(b, prev, -1)
			prev = b
			if id := s.prog.seedIDs[k]; id >= 0 {
				s.blocks[b].id = id
				s.blockOf[id] = b
				if fb.State == snapshot.StateActivePendingFree {
					s.blocks[b].state = stPending
					s.pending = append(s.pending, id)
					s.npending++
				} else {
					s.blocks[b].state = stAllocated
					s.addAllocated(fb.Size)
				}
			} else {
				s.insertFree(b)
			}
			k++
		}
		if sg.Expandable && prev >= 0 {
			last[resKey{sg.Stream, pool}] = prev
		}
		s.addReserved(sg.TotalSize)
	}
	for _, lb := range last {
		tails = append(tails, lb)
	}
	slices.SortFunc(tails, func(a, b int32) int { return cmp.Compare(s.blocks[a].addr, s.blocks[b].addr) })
	for _, lb := range tails {
		x := &s.blocks[lb]
		e := &s.es[x.es]
		end := x.addr + uint64(x.size)
		size := int64(vaSize) - int64(end-e.base)
		if size < e.page {
			size = e.page
		}
		size = size / e.page * e.page
		t := s.newBlock(end, size, x.stream, x.pool, x.es)
		s.blocks[t].mapped = false
		s.splice(t, lb, -1)
		s.insertUnmapped(t)
	}
}

// run simulates the program and returns the outcome.
func (s *sim) run() Outcome { return s.runFrom(0) }

// runFrom simulates the program from op start (the state being the one
// before it) and returns the outcome.
func (s *sim) runFrom(start int) Outcome {
	ops := s.prog.ops
	for i := start; i < len(ops); i++ {
		o := &ops[i]
		s.steps++
		switch o.kind {
		case opAlloc, opOOM:
			if s.ckptOn && s.ckpt == nil && s.mayBind(o) {
				s.ckpt, s.ckptOp = s.clone(), i
			}
			ok := s.malloc(o)
			if s.obs != nil {
				s.obs.done(o, ok, s.blockOf[o.id])
			}
			if !ok {
				s.out.OOMs++
				if s.out.FirstOOM < 0 {
					s.out.FirstOOM = int(o.entry)
				}
				if o.kind == opAlloc {
					s.out.Stopped = true
					return s.out
				}
			}
		case opFreeRequested:
			if b := s.blockOf[o.id]; b >= 0 && s.blocks[b].state == stAllocated {
				s.freeRequested(b)
			}
		case opFreeCompleted:
			b := s.blockOf[o.id]
			if b < 0 {
				continue // completed already by a synchronize
			}
			if s.blocks[b].state == stAllocated {
				s.freeRequested(b)
			}
			s.freeBlock(b)
		case opEmptyCache:
			s.releaseCachedBlocks()
		}
	}
	if s.obs != nil {
		s.obs.done(nil, true, -1)
	}
	return s.out
}

// malloc mirrors DeviceCachingAllocator::malloc for op o. It returns
// false when the request fails (an OOM).
func (s *sim) malloc(o *op) bool {
	if o.size < 0 || o.size > maxRequest {
		return false // no device has that much; the arithmetic below would overflow
	}
	size := s.cfg.RoundSize(o.size)
	pi := poolIndex(o.pool, size)
	allocSize := allocator.AllocationSize(size)
	b := s.getFreeBlock(pi, o.stream, size)
	if b < 0 {
		if s.gcOn {
			s.garbageCollect()
		}
		b = s.allocBlock(pi, o.stream, size, allocSize, false)
		if b < 0 && s.releaseAvailableCachedBlocks(pi, o.stream, size) {
			b = s.allocBlock(pi, o.stream, size, allocSize, false)
		}
		if b < 0 && o.pool == 0 {
			// captures_underway is empty outside a CUDA graph capture,
			// whose requests are the private pools'.
			s.releaseCachedBlocks()
			b = s.allocBlock(pi, o.stream, size, allocSize, true)
		}
	}
	if b < 0 {
		return false
	}
	split := s.cfg.ShouldSplit(s.pools[pi].small, s.blocks[b].size, size)
	s.allocFoundBlock(b, size, o.id, split)
	return true
}

// getFreeBlock mirrors get_free_block: the smallest free block of the
// pool on the stream that fits (lower_bound by stream, size, address),
// with the expandable-segment and oversize rules. It removes the block
// from its pool and returns it, or -1.
func (s *sim) getFreeBlock(pi int16, stream uint64, size int64) int32 {
	p := &s.pools[pi]
	if s.gcOn {
		p.getFreeCalls++
	}
	set := &p.blocks
	it := set.seek(bkey{stream: stream, size: size, b: math.MinInt32})
	if !set.valid(it) || set.at(it).stream != stream {
		return -1
	}
	if s.blocks[set.at(it).b].es >= 0 {
		if s.cfg.ExpandableSegments {
			// Best fit counts the unmapped room after a block as its
			// size (expandable_size).
			for next := set.next(it); s.blocks[set.at(it).b].es >= 0 && set.valid(next) &&
				set.at(next).stream == stream && s.expandableSize(set.at(next).b) < s.expandableSize(set.at(it).b); next = set.next(next) {
				it = next
			}
		} else {
			// The setting was turned off: skip expandable blocks.
			for {
				it = set.next(it)
				if !set.valid(it) || s.blocks[set.at(it).b].es < 0 || set.at(it).stream != stream {
					break
				}
			}
			if !set.valid(it) || set.at(it).stream != stream {
				return -1
			}
		}
	}
	b := set.at(it).b
	if s.cfg.RejectsCachedBlock(s.blocks[b].size, size) {
		return -1
	}
	set.deleteAt(it)
	return b
}

// expandableSize is get_free_block's expandable_size: the block's size
// plus the unmapped range after it.
func (s *sim) expandableSize(b int32) int64 {
	x := &s.blocks[b]
	if x.next >= 0 && !s.blocks[x.next].mapped {
		return x.size + s.blocks[x.next].size
	}
	return x.size
}

// allocBlock mirrors alloc_block: a new segment (cudaMalloc of allocSize
// bytes) or, with expandable segments, pages mapped for size bytes;
// refused when the cap would be passed. It returns the new free block (in
// no pool), or -1.
func (s *sim) allocBlock(pi int16, stream uint64, size, allocSize int64, retry bool) int32 {
	if retry {
		s.out.AllocRetries++
	}
	if s.limit > 0 && s.reserved+allocSize > s.limit {
		return -1
	}
	if s.cfg.ExpandableSegments {
		return s.tryAllocateExpandableBlock(pi, stream, size)
	}
	addr := s.mallocAddr(allocSize)
	b := s.newBlock(addr, allocSize, stream, pi, -1)
	s.addReserved(allocSize)
	s.out.DeviceAllocs++
	if s.obs != nil {
		s.obs.segment(segEvent{action: snapshot.ActionSegmentAlloc, addr: addr, size: allocSize, es: -1})
	}
	return b
}

// mallocAddr is the address cudaMalloc returns for size bytes. The
// address decides between cached blocks of equal size (BlockComparatorSize
// ends with it). Every simulation, under any setting, takes it the same
// way, so that a setting simulated with --conf and the file's own row are
// one computation: while the simulation's cudaMalloc calls have matched
// the trace's segment_alloc entries one for one, size for size, the
// trace's address is the driver's choice. From the first that does not,
// the address is the next one below every segment so far, as the CUDA
// driver hands out addresses in the recordings (each new segment below
// the last): the driver's choice for a run that did not happen cannot be
// known, and this one predicts the what-if recordings to the byte.
func (s *sim) mallocAddr(size int64) uint64 {
	if !s.offTrace {
		segs := s.prog.segEntries
		for s.nextMalloc < len(segs) && s.prog.trace[segs[s.nextMalloc]].Action != snapshot.ActionSegmentAlloc {
			s.nextMalloc++
		}
		if s.nextMalloc < len(segs) {
			e := &s.prog.trace[segs[s.nextMalloc]]
			s.nextMalloc++
			if e.Size == size {
				s.nextSynthetic = min(s.nextSynthetic, uint64(e.Addr))
				return uint64(e.Addr)
			}
		}
		s.offTrace = true
	}
	s.nextSynthetic -= uint64((size + allocator.SmallBuffer - 1) / allocator.SmallBuffer * allocator.SmallBuffer)
	return s.nextSynthetic
}

// releaseAvailableCachedBlocks mirrors release_available_cached_blocks:
// with max_split_size set, release the smallest oversize cached block that
// covers the request, else the largest ones until enough is released.
func (s *sim) releaseAvailableCachedBlocks(pi int16, stream uint64, size int64) bool {
	ms := s.cfg.MaxSplitSize
	if ms == math.MaxInt64 {
		return false
	}
	p := &s.pools[pi]
	keySize := max(size, ms)
	pivot := bkey{stream: stream, size: keySize, b: math.MinInt32}
	var hit bkey
	ok := false
	p.blocks.AscendGreaterOrEqual(pivot, func(k bkey) bool {
		hit, ok = k, k.stream == stream
		return false
	})
	if ok {
		s.releaseBlock(hit.b)
		return true
	}
	var victims []int32
	var total int64
	p.blocks.DescendLessThan(pivot, func(k bkey) bool {
		if total >= keySize || k.size < ms || k.stream != stream {
			return false
		}
		total += k.size
		victims = append(victims, k.b)
		return true
	})
	for _, b := range victims {
		s.releaseBlock(b)
	}
	return total >= keySize
}

// releaseCachedBlocks mirrors release_cached_blocks (empty_cache, and the
// last retry of malloc): synchronize_and_free_events completes every
// pending free, then release_blocks frees every unsplit cached block of
// the default pools and unmaps the free pages of expandable segments.
func (s *sim) releaseCachedBlocks() {
	for _, id := range s.pending {
		if b := s.blockOf[id]; b >= 0 && s.blocks[b].state == stPending {
			s.freeBlock(b)
		}
	}
	s.pending = s.pending[:0]
	s.npending = 0
	s.releaseBlocks(0)
	s.releaseBlocks(1)
}

// releaseBlocks mirrors release_blocks for pool pi.
func (s *sim) releaseBlocks(pi int16) {
	p := &s.pools[pi]
	var toRelease, toUnmap []int32
	p.blocks.Ascend(func(k bkey) bool {
		switch {
		case s.blocks[k.b].es >= 0:
			toUnmap = append(toUnmap, k.b)
		case !s.isSplit(k.b):
			toRelease = append(toRelease, k.b)
		}
		return true
	})
	// release_blocks releases as it walks the pool and unmaps afterwards;
	// the walk's order is the pool's.
	for _, b := range toRelease {
		s.releaseBlock(b)
	}
	for _, b := range toUnmap {
		s.unmapBlock(b)
		if !s.isSplit(b) && !s.blocks[b].mapped {
			// release_expandable_segment
			s.removeUnmapped(b)
			s.deleteBlock(b)
		}
	}
}

// releaseBlock mirrors release_block: cudaFree of an unsplit free block.
func (s *sim) releaseBlock(b int32) {
	x := &s.blocks[b]
	if s.isSplit(b) || x.es >= 0 {
		return // torch never releases these
	}
	s.removeFree(b)
	s.addReserved(-x.size)
	if s.obs != nil {
		s.obs.segment(segEvent{action: snapshot.ActionSegmentFree, addr: x.addr, size: x.size, es: -1})
	}
	s.deleteBlock(b)
}

// garbageCollect mirrors garbage_collect_cached_blocks: when reserved
// passes garbage_collection_threshold x the cap, release unsplit cached
// blocks of the large pool at least as old (in get_free_block calls since
// they were cached) as the average, pass after pass, until enough is
// released.
func (s *sim) garbageCollect() {
	threshold := int64(s.cfg.GarbageCollectionThreshold * float64(s.limit))
	if s.reserved <= threshold {
		return
	}
	target := s.reserved - threshold
	p := &s.pools[0]
	var totalAge int64
	count := 0
	p.blocks.Ascend(func(k bkey) bool {
		if !s.isSplit(k.b) {
			totalAge += p.getFreeCalls - s.blocks[k.b].gcBase
			count++
		}
		return true
	})
	if count == 0 {
		return
	}
	var reclaimed int64
	freed := true
	var victims []int32
	for reclaimed < target && freed && count > 0 {
		avg := float64(totalAge) / float64(count)
		freed = false
		victims = victims[:0]
		p.blocks.Ascend(func(k bkey) bool {
			if !s.isSplit(k.b) && float64(p.getFreeCalls-s.blocks[k.b].gcBase) >= avg {
				victims = append(victims, k.b)
			}
			return true
		})
		for _, b := range victims {
			freed = true
			reclaimed += s.blocks[b].size
			totalAge -= p.getFreeCalls - s.blocks[b].gcBase
			count--
			s.releaseBlock(b)
		}
	}
}

// allocFoundBlock mirrors alloc_found_block: the block serves request id,
// split when split is true (the rest returns to the pool).
func (s *sim) allocFoundBlock(b int32, size int64, id int32, split bool) {
	if split {
		r := &s.blocks[b]
		nb := s.newBlock(r.addr, size, r.stream, r.pool, r.es)
		r = &s.blocks[b]
		n := &s.blocks[nb]
		n.prev = r.prev
		if n.prev >= 0 {
			s.blocks[n.prev].next = nb
		}
		n.next = b
		r.prev = nb
		r.addr += uint64(size)
		r.size -= size
		s.insertFree(b)
		b = nb
	}
	x := &s.blocks[b]
	x.state = stAllocated
	x.id = id
	s.blockOf[id] = b
	s.addAllocated(x.size)
	if s.newPeak {
		s.out.GapAtPeak = s.reserved - s.allocated
		s.newPeak = false
	}
}

// freeRequested mirrors the accounting of free(): the block is no longer
// allocated; it stays active until its free_completed.
func (s *sim) freeRequested(b int32) {
	x := &s.blocks[b]
	x.state = stPending
	s.addAllocated(-x.size)
	s.pending = append(s.pending, x.id)
	s.npending++
	if len(s.pending) > 2*s.npending+1024 {
		s.compactPending()
	}
}

// compactPending drops the completed frees from s.pending.
func (s *sim) compactPending() {
	k := 0
	for _, id := range s.pending {
		if b := s.blockOf[id]; b >= 0 && s.blocks[b].state == stPending {
			s.pending[k] = id
			k++
		}
	}
	s.pending = s.pending[:k]
}

// freeBlock mirrors free_block: the block becomes free, merges with its
// free neighbours (try_merge_blocks) and returns to its pool.
func (s *sim) freeBlock(b int32) {
	x := &s.blocks[b]
	if x.state == stPending {
		s.npending--
	}
	s.blockOf[x.id] = -1
	x.state = stFree
	x.id = -1
	s.tryMerge(b, x.prev)
	s.tryMerge(b, s.blocks[b].next)
	s.insertFree(b)
}

// tryMerge mirrors try_merge_blocks: src, a free neighbour of dst in the
// same mapping state, joins dst. Neither may be in a pool's set but src.
func (s *sim) tryMerge(dst, src int32) {
	if src < 0 {
		return
	}
	d, o := &s.blocks[dst], &s.blocks[src]
	if o.state != stFree || d.mapped != o.mapped {
		return
	}
	if o.mapped {
		s.removeFree(src)
	} else {
		s.removeUnmapped(src)
	}
	if d.prev == src {
		d.addr = o.addr
		d.prev = o.prev
		if d.prev >= 0 {
			s.blocks[d.prev].next = dst
		}
	} else {
		d.next = o.next
		if d.next >= 0 {
			s.blocks[d.next].prev = dst
		}
	}
	d.size += o.size
	s.deleteBlock(src)
}

// tryAllocateExpandableBlock mirrors try_allocate_expandable_block: map
// pages at the lowest address of an expandable segment of the pool and
// stream where size bytes fit (find_expandable_block), growing the free
// block there; it returns that block, out of its pool.
func (s *sim) tryAllocateExpandableBlock(pi int16, stream uint64, size int64) int32 {
	c := s.findExpandableBlock(pi, stream, size)
	if !s.blocks[c].mapped {
		s.mapBlock(c, min(s.blocks[c].size, size))
	}
	for s.blocks[c].size < size {
		nc := s.blocks[c].next
		s.mapBlock(nc, min(size-s.blocks[c].size, s.blocks[nc].size))
		c = nc
	}
	s.removeFree(c)
	return c
}

func (s *sim) allocatable(b int32) bool { return b >= 0 && s.blocks[b].state == stFree }

// findExpandableBlock mirrors find_expandable_block.
func (s *sim) findExpandableBlock(pi int16, stream uint64, size int64) int32 {
	p := &s.pools[pi]
	found := int32(-1)
	p.unmapped.AscendGreaterOrEqual(bkey{stream: stream, b: math.MinInt32}, func(k bkey) bool {
		if k.stream != stream {
			return false
		}
		c := k.b
		if pv := s.blocks[c].prev; s.allocatable(pv) {
			c = pv
		}
		var bytes int64
		for b := c; bytes < size && s.allocatable(b); b = s.blocks[b].next {
			bytes += s.blocks[b].size
		}
		if bytes >= size {
			found = c
			return false
		}
		return true
	})
	if found >= 0 {
		return found
	}
	page := allocator.PageSize(p.small)
	es := int32(len(s.es))
	base := uint64(expandableBase) + uint64(es)*expandableSpan
	s.es = append(s.es, expSeg{base: base, page: page})
	b := s.newBlock(base, max(vaSize, size+page)/page*page, stream, pi, es)
	s.blocks[b].mapped = false
	s.insertUnmapped(b)
	return b
}

// mapBlock mirrors map_block: map the pages covering size bytes at the
// start of unmapped block b; the mapped part merges with free neighbours
// and joins the pool.
func (s *sim) mapBlock(b int32, size int64) {
	x := &s.blocks[b]
	page := s.es[x.es].page
	mapped := (size + page - 1) / page * page
	addr := x.addr
	s.removeUnmapped(b)
	x.mapped = true
	if mapped < x.size {
		r := s.newBlock(x.addr+uint64(mapped), x.size-mapped, x.stream, x.pool, x.es)
		x = &s.blocks[b]
		s.blocks[r].mapped = false
		s.blocks[r].prev = b
		s.blocks[r].next = x.next
		if x.next >= 0 {
			s.blocks[x.next].prev = r
		}
		x.next = r
		x.size = mapped
		s.insertUnmapped(r)
	}
	s.tryMerge(b, s.blocks[b].prev)
	s.tryMerge(b, s.blocks[b].next)
	s.insertFree(b)
	s.addReserved(mapped)
	s.out.DeviceAllocs++
	if s.obs != nil {
		s.obs.segment(segEvent{action: snapshot.ActionSegmentMap, addr: addr, size: mapped, es: s.blocks[b].es})
	}
}

// unmapBlock mirrors unmap_block: unmap the whole pages inside free block
// b; the parts of partial pages stay free blocks of their own.
func (s *sim) unmapBlock(b int32) {
	x := &s.blocks[b]
	e := &s.es[x.es]
	page := uint64(e.page)
	begin := (x.addr - e.base + page - 1) / page
	end := (x.addr + uint64(x.size) - e.base) / page
	if begin >= end {
		return
	}
	s.removeFree(b)
	uptr := e.base + begin*page
	usize := int64((end - begin) * page)
	if before := int64(uptr - x.addr); before > 0 {
		nb := s.newBlock(x.addr, before, x.stream, x.pool, x.es)
		x = &s.blocks[b]
		s.splice(nb, x.prev, b)
		s.insertFree(nb)
	}
	if after := x.size - int64(uptr-x.addr) - usize; after > 0 {
		nb := s.newBlock(uptr+uint64(usize), after, x.stream, x.pool, x.es)
		x = &s.blocks[b]
		s.splice(nb, b, x.next)
		s.insertFree(nb)
	}
	x = &s.blocks[b]
	x.addr, x.size, x.mapped = uptr, usize, false
	s.tryMerge(b, x.prev)
	s.tryMerge(b, s.blocks[b].next)
	s.insertUnmapped(b)
	s.addReserved(-usize)
	if s.obs != nil {
		s.obs.segment(segEvent{action: snapshot.ActionSegmentUnmap, addr: uptr, size: usize, es: s.blocks[b].es})
	}
}

// splice links block b between before and after (Block::splice).
func (s *sim) splice(b, before, after int32) {
	if before >= 0 {
		s.blocks[before].next = b
	}
	s.blocks[b].prev = before
	if after >= 0 {
		s.blocks[after].prev = b
	}
	s.blocks[b].next = after
}
