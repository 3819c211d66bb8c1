// Package hostreplay replays the pinned host memory trace that PyTorch
// records with _record_memory_history(record_pinned_host_memory=True)
// (pytorch/pytorch#182407, whose first form calls the argument
// record_host) in the snapshot keys host_traces and host_segments, under
// the rules of the caching host allocator, CachingHostAllocatorImpl in
// aten/src/ATen/core/CachingHostAllocator.h (free lists from package
// analyze/allocator: HostSizeIndex, HostFreeList). The layout follows
// PyTorch's own writer, THCPModule_memorySnapshot in
// torch/csrc/cuda/Module.cpp (and _memory_snapshot_pickled in
// torch/csrc/cuda/memory_snapshot.cpp): host_traces is one flat list of
// getTraces()'s entries; host_segments is getSegments(), one segment of
// one block per pinned block, device -1, segment_pool_id the block's
// pool. record_trace writes every entry with the block's size (alloc
// included: the rounded block, never the request), stream 0, pool_id
// (0, 0) whatever the block's pool, compile_context and user_metadata
// empty, and frames only on alloc (context "state" and up) and
// free_requested (context "all").
//
//   - allocate takes the block cached last in its size's free list of the
//     current pool (get_free_block); only when that list is empty does it
//     pin a new block (segment_alloc, then alloc: one block per segment,
//     the host allocator never splits);
//   - free (free_requested) with no stream recorded on the block caches it
//     at once (maybe_cache_block: free_completed); with streams it waits
//     for their events, and the block is reusable only once they complete
//     (free_completed); a block over pinned_max_cached_size is unpinned
//     right after (destroy_block: segment_free);
//   - empty_cache unpins every cached block (segment_free) of the default
//     pool and of released private pools, never a block handed out or
//     waiting for its events.
//
// Pools: a CUDA graph capture allocates into a private pool
// (HostPrivatePool) whose blocks never serve another pool. The trace does
// not name the pool (record_trace writes pool_id (0, 0)), so a block's pool
// is its host segment's segment_pool_id, the default pool for a block the
// file's host_segments no longer hold.
//
// The figures mirror torch.cuda.host_memory_stats() (torch/cuda/memory.py):
// allocations and allocated_bytes count the pinned blocks the allocator
// owns (handed out and cached), active_requests and active_bytes the
// blocks handed out until they are reusable again. Their trust follows the
// device's rule (analyze/replay DecideTrust) in the same words: exact when
// the trace holds the whole history and ends in the file's host_segments,
// a lower bound when it misses the start, unknown when it breaks a rule or
// ends elsewhere.
package hostreplay

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// BlockState is a pinned block's state in the replay.
type BlockState uint8

const (
	// Allocated: handed out by allocate (the snapshot's active_allocated).
	Allocated BlockState = iota + 1
	// PendingFree: freed (free_requested) while events of the streams it
	// was used on are outstanding (active_pending_free); not reusable.
	PendingFree
	// Cached: on its free list, ready for reuse (inactive).
	Cached
)

// String names the state as the snapshot's block states do.
func (b BlockState) String() string {
	switch b {
	case Allocated:
		return "active_allocated"
	case PendingFree:
		return "active_pending_free"
	case Cached:
		return "inactive"
	}
	return "unknown"
}

// Block is one pinned block (one host segment). Size is its rounded size
// in bytes; Stack the stack of the alloc that handed it out (of the
// segment's block for a block older than the trace); Entry that alloc's
// index in host_traces, -1 when the trace does not show it.
type Block struct {
	Addr  snapshot.Addr
	Size  int64
	State BlockState
	Stack snapshot.StackID
	Entry int
}

// Stats mirrors torch.cuda.host_memory_stats(): counts and bytes, each a
// stats.Stat (current, peak, allocated = cumulative increases, freed =
// cumulative decreases).
type Stats struct {
	Allocations    stats.Stat // "allocations": pinned blocks owned (handed out and cached)
	AllocatedBytes stats.Stat // "allocated_bytes": bytes of those blocks
	ActiveRequests stats.Stat // "active_requests": blocks handed out, until reusable
	ActiveBytes    stats.Stat // "active_bytes": bytes of those blocks
	NumHostAlloc   int64      // "num_host_alloc": blocks pinned (segment_alloc)
	NumHostFree    int64      // "num_host_free": blocks unpinned (segment_free)
}

// Result is one replay of host_traces.
type Result struct {
	// Stats are the replayed figures; Trust and Why say how far to trust
	// their history (peaks, allocated, freed, the num_ counters).
	Stats Stats
	Trust stats.Exactness
	Why   string
	// Entries is len(host_traces); PeakEntry the entry after which
	// ActiveBytes first reached its peak, PeakReservedEntry the one for
	// AllocatedBytes (-1 without entries).
	Entries                      int
	PeakEntry, PeakReservedEntry int
	// End is the replayed end state, in address order.
	End []Block
	// Seeded counts the blocks the trace uses before (or without) pinning
	// them: they are older than the trace.
	Seeded int
	// Deviations are where the trace breaks a rule of the host allocator
	// (at most maxDeviations, each naming its entry); NumDeviations counts
	// them all.
	Deviations    []string
	NumDeviations int
	// Checked is true when the file has host_segments to compare the end
	// state with; Equal when they agree; Differences the first few that
	// do not.
	Checked, Equal bool
	Differences    []string
}

const maxDeviations = 8

type block struct {
	Block
	fresh bool // pinned by segment_alloc and not yet handed out
}

// listKey names one free list: a pool's list of a size index.
type listKey struct {
	pool  snapshot.PoolID
	index int
}

type replayer struct {
	s      *snapshot.Snapshot
	blocks map[snapshot.Addr]*block
	free   map[listKey]*allocator.HostFreeList[snapshot.Addr]
	pools  map[snapshot.Addr]snapshot.PoolID // the file's host segments' pools
	st     Stats
	r      *Result
}

// Run replays s.HostTraces from the blocks that are older than the trace
// (seeded from the trace's first use of each address, and from the
// host_segments the trace never touches). It never fails: where the trace
// breaks a rule, the rule's words go to Result.Deviations and the trust
// becomes Unknown.
func Run(s *snapshot.Snapshot) Result {
	r := Result{Entries: len(s.HostTraces), PeakEntry: -1, PeakReservedEntry: -1,
		End: []Block{}, Deviations: []string{}, Differences: []string{}}
	p := &replayer{s: s, blocks: map[snapshot.Addr]*block{}, free: map[listKey]*allocator.HostFreeList[snapshot.Addr]{},
		pools: map[snapshot.Addr]snapshot.PoolID{}, r: &r}
	for i := range s.HostSegments {
		p.pools[s.HostSegments[i].Address] = s.HostSegments[i].Pool
	}
	p.seed()
	for i := range s.HostTraces {
		p.step(i, &s.HostTraces[i])
	}
	r.Stats = p.st
	for _, b := range p.blocks {
		r.End = append(r.End, b.Block)
	}
	slices.SortFunc(r.End, func(a, b Block) int { return cmp.Compare(a.Addr, b.Addr) })
	p.check()
	r.Trust, r.Why = p.trust()
	return r
}

// seed adds the blocks older than the trace: an address whose first entry
// is not segment_alloc was pinned before the trace began, in the state
// that entry implies (alloc: cached; a free: handed out); a host segment
// the trace never names was there all along, in its end state.
func (p *replayer) seed() {
	first := map[snapshot.Addr]*snapshot.TraceEntry{}
	var order []snapshot.Addr
	for i := range p.s.HostTraces {
		e := &p.s.HostTraces[i]
		if !hostAction(e.Action) {
			continue
		}
		if _, ok := first[e.Addr]; !ok {
			first[e.Addr] = e
			order = append(order, e.Addr)
		}
	}
	segs := map[snapshot.Addr]*snapshot.Segment{}
	for i := range p.s.HostSegments {
		segs[p.s.HostSegments[i].Address] = &p.s.HostSegments[i]
	}
	add := func(addr snapshot.Addr, size int64, st BlockState, stack snapshot.StackID) {
		b := &block{Block: Block{Addr: addr, Size: size, State: st, Stack: stack, Entry: -1}}
		p.blocks[addr] = b
		p.r.Seeded++
		p.st.Allocations.Current++
		p.st.AllocatedBytes.Current += size
		if st == Cached {
			p.list(addr, size).Push(addr)
		} else {
			p.st.ActiveRequests.Current++
			p.st.ActiveBytes.Current += size
		}
	}
	for _, addr := range order {
		e := first[addr]
		size := e.Size // every host entry records the block's size
		var stack snapshot.StackID
		if sg := segs[addr]; sg != nil {
			size = sg.TotalSize
			if len(sg.Blocks) > 0 {
				stack = sg.Blocks[0].Stack
			}
		}
		switch e.Action {
		case snapshot.ActionSegmentAlloc:
		case snapshot.ActionAlloc:
			add(addr, size, Cached, snapshot.NoStack)
		case snapshot.ActionFreeCompleted:
			add(addr, size, PendingFree, stack)
		default: // free_requested, segment_free
			if e.Action == snapshot.ActionSegmentFree {
				add(addr, size, Cached, snapshot.NoStack)
			} else {
				add(addr, size, Allocated, stack)
			}
		}
	}
	for i := range p.s.HostSegments {
		sg := &p.s.HostSegments[i]
		if _, ok := first[sg.Address]; ok {
			continue
		}
		st, stack := Cached, snapshot.NoStack
		if len(sg.Blocks) > 0 {
			stack = sg.Blocks[0].Stack
			switch sg.Blocks[0].State {
			case snapshot.StateActiveAllocated:
				st = Allocated
			case snapshot.StateActivePendingFree:
				st = PendingFree
			}
		}
		add(sg.Address, sg.TotalSize, st, stack)
	}
	for _, s := range []*stats.Stat{&p.st.Allocations, &p.st.AllocatedBytes, &p.st.ActiveRequests, &p.st.ActiveBytes} {
		s.Peak = s.Current
	}
}

func hostAction(a snapshot.Action) bool {
	switch a {
	case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree, snapshot.ActionAlloc,
		snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
		return true
	}
	return false
}

// list is the free list a block at addr of size bytes is cached in: its
// pool's list of its size index.
func (p *replayer) list(addr snapshot.Addr, size int64) *allocator.HostFreeList[snapshot.Addr] {
	k := listKey{pool: p.pools[addr], index: allocator.HostSizeIndex(size)}
	l := p.free[k]
	if l == nil {
		l = &allocator.HostFreeList[snapshot.Addr]{}
		p.free[k] = l
	}
	return l
}

func (p *replayer) deviate(i int, e *snapshot.TraceEntry, format string, args ...any) {
	p.r.NumDeviations++
	if len(p.r.Deviations) < maxDeviations {
		p.r.Deviations = append(p.r.Deviations, fmt.Sprintf("host entry %d: %s at %#x: ", i, e.Action, uint64(e.Addr))+fmt.Sprintf(format, args...))
	}
}

// inc increases s by n and reports whether it reached a new peak.
func inc(s *stats.Stat, n int64) bool {
	s.Current += n
	s.Allocated += n
	if s.Current > s.Peak {
		s.Peak = s.Current
		return true
	}
	return false
}

func dec(s *stats.Stat, n int64) {
	s.Current -= n
	s.Freed += n
}

func (p *replayer) step(i int, e *snapshot.TraceEntry) {
	if !hostAction(e.Action) {
		return // annotate, snapshot markers and newer actions do not move blocks
	}
	b := p.blocks[e.Addr]
	switch e.Action {
	case snapshot.ActionSegmentAlloc:
		if b != nil {
			p.deviate(i, e, "the address is already pinned")
			return
		}
		size := e.Size
		if l := p.list(e.Addr, size); l.Len() > 0 {
			p.deviate(i, e, "a new block of %s while %s of that size were cached in its pool (allocate reuses a cached block first)",
				units.Bytes(size), units.Plural(l.Len(), "block"))
		}
		p.blocks[e.Addr] = &block{Block: Block{Addr: e.Addr, Size: size, State: Cached, Entry: -1}, fresh: true}
		inc(&p.st.Allocations, 1)
		if inc(&p.st.AllocatedBytes, size) {
			p.r.PeakReservedEntry = i
		}
		p.st.NumHostAlloc++
	case snapshot.ActionAlloc:
		if b == nil {
			p.deviate(i, e, "no pinned block there")
			return
		}
		if e.Size != b.Size {
			p.deviate(i, e, "records %s, the block holds %s (allocate records the block's size)", units.Bytes(e.Size), units.Bytes(b.Size))
		}
		switch {
		case b.fresh:
			b.fresh = false
		case b.State == Cached:
			l := p.list(b.Addr, b.Size)
			if back, _ := l.Back(); back != b.Addr {
				p.deviate(i, e, "reuses a cached block other than the one cached last (get_free_block takes the back of its free list, %#x)", uint64(back))
			}
			l.Remove(b.Addr)
		case b.State == PendingFree:
			p.deviate(i, e, "reused before the events of its streams completed (no free_completed after its free_requested)")
			dec(&p.st.ActiveRequests, 1)
			dec(&p.st.ActiveBytes, b.Size)
		default:
			p.deviate(i, e, "the block is already handed out")
			return
		}
		b.State, b.Stack, b.Entry = Allocated, e.Stack, i
		inc(&p.st.ActiveRequests, 1)
		if inc(&p.st.ActiveBytes, b.Size) {
			p.r.PeakEntry = i
		}
	case snapshot.ActionFreeRequested:
		if b == nil || b.State != Allocated {
			p.deviate(i, e, "the block is not handed out")
			return
		}
		b.State = PendingFree
	case snapshot.ActionFreeCompleted:
		if b == nil || b.State == Cached {
			p.deviate(i, e, "the block is not handed out")
			return
		}
		if b.State == Allocated {
			p.deviate(i, e, "no free_requested before it")
		}
		b.State = Cached
		p.list(b.Addr, b.Size).Push(b.Addr)
		dec(&p.st.ActiveRequests, 1)
		dec(&p.st.ActiveBytes, b.Size)
	case snapshot.ActionSegmentFree:
		if b == nil {
			p.deviate(i, e, "no pinned block there")
			return
		}
		if b.State != Cached || b.fresh {
			p.deviate(i, e, "the block is %s (empty_cache unpins cached blocks only)", b.State)
			if b.State != Cached {
				dec(&p.st.ActiveRequests, 1)
				dec(&p.st.ActiveBytes, b.Size)
			}
		}
		p.list(b.Addr, b.Size).Remove(b.Addr)
		delete(p.blocks, e.Addr)
		dec(&p.st.Allocations, 1)
		dec(&p.st.AllocatedBytes, b.Size)
		p.st.NumHostFree++
	}
}
