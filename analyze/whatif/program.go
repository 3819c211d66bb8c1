// Package whatif simulates PyTorch's CUDA caching allocator
// (DeviceCachingAllocator of c10/cuda/CUDACachingAllocator.cpp, torch 2.11)
// forward over the requests a snapshot's trace records, under allocator
// settings and a memory cap other than the ones the run had, and predicts
// what the run would have reserved and whether it would have run out of
// memory.
//
// The simulation is driven by the trace's requests: each alloc entry's
// size and stream, the order of free_requested and free_completed entries
// (so frees pending on other streams complete where the trace shows them),
// and the calls to torch.cuda.empty_cache() (runs of segment_free or
// segment_unmap entries no request explains). It chooses its own blocks,
// with the allocator's own rules (package analyze/allocator) and simulated
// addresses; it never follows the trace's addresses.
//
// Before predicting anything, [Analyze] simulates the file under its own
// settings and compares the result with the file (the self-check): every
// segment_alloc (or segment_map) size and address in order, every
// allocation's segment and offset, the peaks and the OOMs. The file's row
// and any other setting are one computation (a setting given as the
// file's own gives the file's row).
//
// The cap the run had is given (Options.Limit), read from torch's OOM
// message ([ParseOOMMessage]), or bounded by the trace (its oom entry, or
// the cached-segment frees the allocator makes for room under a cap).
// Where only bounds are known, each setting is simulated at both ends and
// the smallest cap under which it fits is searched ([CapFit]); [Verdict]
// states the answer over the bounds, and [OOMVerdict] is the one every
// view of an OOM prints.
package whatif

import (
	"fmt"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// opKind is what the simulation does at one trace entry.
type opKind uint8

const (
	// opAlloc is a request the run served (an alloc entry): size is the
	// caller's unrounded size.
	opAlloc opKind = iota
	// opOOM is a request the run failed (an oom entry): size is the
	// request rounded under the file's settings, all torch records of it
	// (params.size() in malloc). Other settings round it again, so under
	// a finer rounding the request may be overestimated by the file's
	// rounding step.
	opOOM
	// opFreeRequested is free(): the block stops being allocated.
	opFreeRequested
	// opFreeCompleted is free_block(): the block returns to its pool.
	opFreeCompleted
	// opEmptyCache is torch.cuda.empty_cache(): release_cached_blocks.
	opEmptyCache
)

// op is one step of the simulation, taken from trace entry entry.
type op struct {
	size   int64
	stream uint64
	entry  int32
	id     int32 // the request (block) the op is about
	pool   int16 // 0: the default pools; i > 0: private pool i
	kind   opKind
}

// program is a device's trace turned into simulation steps, with what the
// self-check compares against. It is built once per file and shared,
// read-only, by every simulation.
type program struct {
	device int
	trace  []snapshot.TraceEntry
	ops    []op
	// nids is the number of request ids: the blocks active before the
	// first entry (seed) come first.
	nids int
	// seed is the allocator state before the first entry, in address
	// order; seedIDs the request id of each active seed block, in the
	// same order (segment by segment, block by block), -1 for free ones.
	seed    []snapshot.Segment
	seedIDs []int32
	// segEntries are the indexes of the trace's segment_alloc,
	// segment_free, segment_map and segment_unmap entries, in order.
	segEntries []int32
	// emptyCaches counts the runs of segment_free or segment_unmap
	// entries read as empty_cache() calls (an opEmptyCache each).
	emptyCaches int
	// privatePools are the private pools (CUDA graphs, MemPools) of the
	// file's segments, in file order; pool i+1 of an op is
	// privatePools[i]. npools is their number.
	privatePools []snapshot.PoolID
	npools       int
	// peakReserved and peakAllocated are the replay's peaks (exact for a
	// trace from the start; for a seeded trace, from the seed on).
	peakReserved, peakAllocated int64
	// ooms counts the trace's oom entries.
	ooms int
	// capHints counts the runs of releases right before a new segment
	// read as empty_cache() calls for want of a cap: under a cap they
	// would be the allocator making room.
	capHints int
	// problems are entries the program could not use (a free of a block
	// it never saw allocated), at most a few, with their count.
	problems  []string
	nproblems int
}

// compile builds the program of a device from the replay r of s. limit is
// the memory cap in bytes (0: none) and own the file's settings: both
// decide whether a run of segment_free entries right before a new segment
// was the allocator making room (garbage collection, or the retry after a
// failed cudaMalloc) or an empty_cache() call.
func compile(s *snapshot.Snapshot, r *replay.Result, own allocator.Config, limit int64) *program {
	device := r.Device
	var trace []snapshot.TraceEntry
	if device < len(s.Traces) {
		trace = s.Traces[device]
	}
	p := &program{device: device, trace: trace, seed: r.InitialState()}
	p.peakReserved = r.Stats.ReservedBytes[stats.PoolAll].Peak
	p.peakAllocated = r.Stats.AllocatedBytes[stats.PoolAll].Peak

	live := make(map[snapshot.Addr]int32, 1024)
	var reserved int64
	for k := range p.seed {
		sg := &p.seed[k]
		reserved += sg.TotalSize
		for j := range sg.Blocks {
			b := &sg.Blocks[j]
			if b.State.Active() {
				live[b.Address] = int32(p.nids)
				p.seedIDs = append(p.seedIDs, int32(p.nids))
				p.nids++
			} else {
				p.seedIDs = append(p.seedIDs, -1)
			}
		}
	}
	poolOf := p.privatePoolsOf(s, trace)
	p.npools = len(p.privatePools)

	p.ops = make([]op, 0, len(trace))
	for i := range trace {
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionAlloc:
			id := int32(p.nids)
			p.nids++
			live[e.Addr] = id
			p.ops = append(p.ops, op{kind: opAlloc, entry: int32(i), id: id, size: e.Size, stream: e.Stream, pool: poolOf(i, e.Addr)})
		case snapshot.ActionOOM:
			id := int32(p.nids)
			p.nids++
			p.ooms++
			p.ops = append(p.ops, op{kind: opOOM, entry: int32(i), id: id, size: e.Size, stream: e.Stream})
		case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
			id, ok := live[e.Addr]
			if !ok {
				p.problem("entry %d: %s at %v: no allocation there", i, e.Action, e.Addr)
				continue
			}
			k := opFreeRequested
			if e.Action == snapshot.ActionFreeCompleted {
				k = opFreeCompleted
				delete(live, e.Addr)
			}
			p.ops = append(p.ops, op{kind: k, entry: int32(i), id: id, stream: e.Stream})
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			p.segEntries = append(p.segEntries, int32(i))
			reserved += e.Size
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			p.segEntries = append(p.segEntries, int32(i))
			first := i == 0 || !isRelease(trace[i-1].Action)
			if first && !p.makesRoom(i, reserved, own, limit) {
				p.ops = append(p.ops, op{kind: opEmptyCache, entry: int32(i)})
				p.emptyCaches++
			}
			reserved -= e.Size
		}
	}
	return p
}

func isRelease(a snapshot.Action) bool {
	return a == snapshot.ActionSegmentFree || a == snapshot.ActionSegmentUnmap
}

// makesRoom reports whether the run of releases starting at entry i is the
// allocator making room inside a malloc rather than an empty_cache() call.
// reserved is the reserved bytes before the run. The run is followed
// (after any free_completed entries) by the request's new segment or by an
// oom entry. A run before an oom entry is the retry's
// release_cached_blocks. A run before a new segment is the malloc's when
// the process ran under a cap (limit > 0) and either the new segment would
// not have fit without it (alloc_block's check, which
// release_available_cached_blocks and release_cached_blocks answer) or
// the reserved bytes were over garbage_collection_threshold x limit
// (garbage_collect_cached_blocks).
func (p *program) makesRoom(i int, reserved int64, own allocator.Config, limit int64) bool {
	k := i
	for k < len(p.trace) && (isRelease(p.trace[k].Action) || p.trace[k].Action == snapshot.ActionFreeCompleted) {
		k++
	}
	if k == len(p.trace) {
		return false
	}
	switch n := &p.trace[k]; n.Action {
	case snapshot.ActionOOM:
		return true
	case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
		if limit <= 0 {
			p.capHints++
			return false
		}
		// alloc_block checks get_allocation_size of the request: a
		// segment_alloc's size; for expandable segments, more than the
		// pages mapped when a free block already held part of it.
		need := n.Size
		if n.Action == snapshot.ActionSegmentMap {
			for j := k + 1; j < len(p.trace); j++ {
				if a := &p.trace[j]; a.Action == snapshot.ActionAlloc {
					need = max(need, allocator.AllocationSize(own.RoundSize(a.Size)))
					break
				} else if a.Action == snapshot.ActionOOM {
					need = max(need, allocator.AllocationSize(a.Size))
					break
				} else if a.Action != snapshot.ActionSegmentMap {
					break
				}
			}
		}
		if reserved+need > limit {
			return true
		}
		g := own.GarbageCollectionThreshold
		return g > 0 && reserved > int64(g*float64(limit))
	}
	return false
}

func (p *program) problem(format string, args ...any) {
	p.nproblems++
	if len(p.problems) < 5 {
		p.problems = append(p.problems, fmt.Sprintf(format, args...))
	}
}

// privatePoolsOf finds the requests served from a private pool (CUDA graph
// capture), which trace entries do not mark: those inside a segment the
// file lists with a private pool id, made after that segment's last
// segment_alloc or segment_map (replay.LastPoolAllocs: an earlier segment
// at the same address was another one, freed since). It fills
// p.privatePools and returns the pool of the alloc at entry i and address
// addr (0: the default pools).
func (p *program) privatePoolsOf(s *snapshot.Snapshot, trace []snapshot.TraceEntry) func(i int, addr snapshot.Addr) int16 {
	type priv struct {
		start, end snapshot.Addr
		pool       int16
		from       int // last segment_alloc of the segment, -1 when older than the trace
	}
	var segs []priv
	ids := map[snapshot.PoolID]int16{}
	last := replay.LastPoolAllocs(s.Segments, p.device, trace)
	for k := range s.Segments {
		sg := &s.Segments[k]
		if sg.Device != p.device || sg.Pool.IsDefault() {
			continue
		}
		id, ok := ids[sg.Pool]
		if !ok {
			p.privatePools = append(p.privatePools, sg.Pool)
			id = int16(len(p.privatePools))
			ids[sg.Pool] = id
		}
		from, ok := last[sg.Address]
		if !ok {
			from = -1
		}
		segs = append(segs, priv{start: sg.Address, end: sg.Address + snapshot.Addr(sg.TotalSize), pool: id, from: from})
	}
	if len(segs) == 0 {
		return func(int, snapshot.Addr) int16 { return 0 }
	}
	return func(i int, addr snapshot.Addr) int16 {
		for k := range segs {
			if sg := &segs[k]; sg.start <= addr && addr < sg.end && i > sg.from {
				return sg.pool
			}
		}
		return 0
	}
}
