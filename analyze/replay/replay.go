package replay

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// Mode says how much of the replay a Result keeps. Every mode costs the
// same two passes over the trace; they differ in the memory that grows
// with it (32 bytes per entry for the series, 80 per allocation).
type Mode uint8

const (
	// Full keeps the per-entry series (Allocated, Active, Reserved,
	// Requested), Allocs, OOMs and the peaks.
	Full Mode = iota
	// StatsOnly keeps the figures at the end: Result.Stats, Check and
	// Seeded are Full's, but the series, Allocs and OOMs are nil and
	// PeakIndex and PeakReservedIndex are -1 (`summary`, `info`).
	StatsOnly
	// Peaks is StatsOnly that also finds PeakIndex, PeakReservedIndex and
	// OOMs, for the peaks and the state at a moment ([Result.StateAt])
	// without the series or Allocs (`diff` and `ranks`, which compare the
	// peaks of files of millions of entries).
	Peaks
	// Allocations is Full without the Active, Reserved and Requested
	// series (nil): the Allocated series, Allocs, OOMs and the peaks, all
	// that `leaks` reads; three int64 a trace entry fewer (46 MB on the
	// 2M-entry file).
	Allocations
)

// Options says what [Run] keeps. The zero Options is a Full replay
// without states.
type Options struct {
	// Mode says how much of the replay the Result keeps.
	Mode Mode
	// States are trace entries (ascending, each in [-1, entries)) whose
	// allocator state Run returns in Result.States, as [Result.StateAt]
	// would: the replay takes them as it passes them, in one pass (Full
	// only).
	States []int
	// PeakState adds the state at the PeakIndex the replay finds (Full
	// only). The replay keeps a copy of its state from at most
	// entries/64 entries before the highest allocated bytes so far (when
	// the state is small enough for the copies to cost less than the
	// replay), so the peak's state costs a replay of those entries, not
	// of the trace.
	PeakState bool

	// every is the stretch between the copies PeakState keeps, in
	// entries (0: about entries/64, at least 1024); tests set it.
	every int
}

// Run replays PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp,
// DeviceCachingAllocator) over the trace of one device, s.Traces[device],
// and returns the allocator state and the memory_stats() figures after
// every trace entry.
//
// The rules mirror the allocator's own:
//
//   - an alloc entry carries the requested size; the block is carved from
//     the front of the free block at the entry's address and its size is
//     round_size(requested) (round_size, honouring
//     allocator_settings.roundup_power2_divisions), unless the free block
//     is not split (should_split: small pool or expandable segments when
//     the remainder is under 512 bytes; large pool when the remainder is
//     1 MiB or less, or the request is at least max_split_size), in which
//     case the block keeps the whole free block (alloc_found_block);
//   - allocation and allocated_bytes drop at free_requested (free); active,
//     active_bytes and requested_bytes drop at free_completed, where the
//     block merges with its free neighbours (free_block, try_merge_blocks);
//   - inactive_split and inactive_split_bytes change by the net change in
//     free blocks of split segments, as alloc_found_block and free_block
//     compute it, and are not kept for expandable segments;
//   - segment_alloc and segment_free add and remove one cudaMalloc'd
//     segment (alloc_block, release_block); segment_map and segment_unmap
//     map and unmap pages of an expandable segment (map_block,
//     unmap_block): they change reserved_bytes only, as torch keeps no
//     segment count for expandable segments;
//   - an oom entry counts one num_ooms (malloc).
//
// When the trace does not begin with the allocator's first allocation
// (recording started late, or the ring buffer wrapped and dropped the
// oldest entries), the state before the first entry is seeded by undoing
// the trace backwards from the segments in the file; Result.Seeded is then
// true and the history figures (peaks, totals, num_ooms) are lower bounds.
// Blocks allocated before the trace and freed inside it are sized by the
// rounding rules (in the large pool, with the room an unsplit allocation
// would have kept, up to the next address an earlier entry names); a wrong
// guess there shifts the seeded figures, not the end state. Either way the
// replayed end state is compared with the file's segments (Result.Check).
//
// Trace entries carry no private pool id: segments still in the file get
// theirs from it, the others read as the default pool. The Result keeps s;
// s must not change while the Result is in use.
//
// A device that has segments but no trace entries (no history recorded, or
// a legacy segment list) yields a Result with empty series whose Stats hold
// the current figures of the file's segments. Run returns an error only
// when device is negative, the snapshot holds nothing for it, or
// opt.States is out of order or out of range.
//
// opt says what the Result keeps (the zero Options: everything but
// states; see [Mode]) and which allocator states the replay takes as it
// passes them (Result.States).
func Run(s *snapshot.Snapshot, device int, opt Options) (*Result, error) {
	record, peaks := opt.Mode == Full || opt.Mode == Allocations, opt.Mode == Peaks
	allSeries := opt.Mode == Full
	if device < 0 {
		return nil, fmt.Errorf("replaying device %d: no such device", device)
	}
	trace := DeviceTrace(s, device)
	lo, hi := s.DeviceSegments(device)
	hasSegments := slices.ContainsFunc(s.Segments[lo:hi], func(sg snapshot.Segment) bool { return sg.Device == device })
	if len(trace) == 0 && !hasSegments {
		return nil, fmt.Errorf("replaying device %d: the snapshot has no segments and no trace entries for it", device)
	}
	if err := checkStateIndices(device, opt.States, len(trace)); err != nil {
		return nil, err
	}
	capture := record && (len(opt.States) > 0 || opt.PeakState)
	r := &Result{Device: device, PeakIndex: -1, PeakReservedIndex: -1, snap: s}
	r.Rounding = allocator.InferRounding(s, device)
	r.cfg = newReplayConfig(s, trace, r.Rounding.Rule)
	r.SkipsFreeRequested = r.cfg.impliedFreeRequested
	r.lastPoolAlloc = LastPoolAllocs(r.deviceSegments(), device, trace)
	seed, seedProblems := r.seedState(trace)
	r.seed = seed
	r.Seeded = len(seed) > 0 && len(trace) > 0

	n := len(trace)
	if record {
		r.Allocated = make([]int64, n)
		if allSeries {
			r.Active = make([]int64, n)
			r.Reserved = make([]int64, n)
			r.Requested = make([]int64, n)
		}
		r.Allocs = make([]Allocation, 0, countAllocs(trace)+countActive(seed))
	}
	var states []*State
	x := r.newRunner(record)
	x.peaks = peaks || record // the peaks as the replay passes them
	x.pools = newPoolTrack(x)
	var ck *passCapture
	if capture {
		ck = newPassCapture(n, &opt)
		states = x.runCapturing(ck)
	} else {
		x.runTo(n - 1)
	}
	m := x.m

	r.Check = r.endCheck(m, seedProblems)
	r.Stats = r.finalStats(m)
	r.Stats.Known = DecideTrust(s, device, r, nil)
	r.Pools = x.pools.result(r.Stats.Known.History)
	for k, st := range states {
		states[k] = r.finishState(st)
	}
	r.States = states
	if !record {
		return r, nil
	}
	if capture && opt.PeakState && n > 0 {
		k, found := slices.BinarySearchFunc(r.States, r.PeakIndex, func(st *State, i int) int { return cmp.Compare(st.Index, i) })
		if !found {
			r.States = slices.Insert(r.States, k, r.peakState(x, ck))
		}
	}
	return r, nil
}

// checkStateIndices checks entries asked for as states of a device with
// n trace entries: ascending, each in [-1, n).
func checkStateIndices(device int, indices []int, n int) error {
	for k, i := range indices {
		if i < -1 || i >= n {
			return fmt.Errorf("state of device %d: entry %d out of range [-1, %d)", device, i, n)
		}
		if k > 0 && i < indices[k-1] {
			return fmt.Errorf("states of device %d: entries out of order (%d after %d)", device, i, indices[k-1])
		}
	}
	return nil
}

// Result is the outcome of [Run] for one device.
//
// The series Allocated, Active, Reserved and Requested have one value per
// trace entry: entry i's value is the figure after applying
// s.Traces[Device][i], summed over all pools (the "all" row of
// memory_stats()), in bytes.
type Result struct {
	// Device is the CUDA device ordinal replayed.
	Device int

	// States are the allocator states Options.States and PeakState asked
	// for, ascending by Index; nil when none was asked for.
	States []*State

	// Stats are the memory_stats() figures after the last entry (at dump
	// time), with Stats.Known saying which are exact: Current figures are
	// exact; Peak, Allocated, Freed and NumOOMs are exact when the trace
	// starts at the allocator's first allocation (Seeded is false), lower
	// bounds when it was seeded, unknown without a trace. NumDeviceAlloc and
	// NumDeviceFree count segment_alloc/segment_map and
	// segment_free/segment_unmap entries (plus the seeded segments).
	//
	// NumAllocRetries is a lower bound: the number of OOMs. malloc retries
	// cudaMalloc once after release_cached_blocks before it gives up, so each
	// oom entry outside a CUDA-graph capture implies one retry, but a retry
	// that succeeds leaves no entry of its own (its segment_free entries look
	// like an empty_cache before a cudaMalloc). NumAllocRetriesMax adds to
	// the OOMs each segment_alloc or segment_map that directly follows
	// segment_free or segment_unmap entries, where such a retry ends: the
	// most the figure can be (see DecideTrust). NumSyncAllStreams (one per
	// release_cached_blocks, from empty_cache or a retry) is not derivable
	// at all and stays 0.
	Stats stats.MemoryStats

	// Allocated is allocated_bytes.all.current after each entry.
	Allocated []int64
	// Active is active_bytes.all.current after each entry.
	Active []int64
	// Reserved is reserved_bytes.all.current after each entry.
	Reserved []int64
	// Requested is requested_bytes.all.current after each entry.
	Requested []int64

	// Allocs is every allocation's lifetime: first the blocks already
	// active before the first entry (AllocIndex -1, in address order), then
	// one per alloc entry in trace order.
	Allocs []Allocation

	// PeakIndex is the first entry where Allocated is highest, -1 when the
	// trace is empty; PeakReservedIndex the first where Reserved is.
	PeakIndex, PeakReservedIndex int

	// OOMs are the indexes of the oom entries, in trace order.
	OOMs []int

	// Seeded is true when the state before the first entry was not empty:
	// it was reconstructed backwards from the file's segments, so the
	// trace misses the start of the run.
	Seeded bool

	// Check compares the replayed end state with the file's segments.
	Check EndCheck

	// SkipsFreeRequested is true when the trace has free_completed entries
	// and no free_requested (recorded with skip_actions=["free_requested"]):
	// the replay takes each free_completed as the free_requested too, and
	// an Allocation's FreeRequested is its FreeCompleted.
	SkipsFreeRequested bool

	// Pools are the history figures of the device's private pools (the
	// pools of the file's segments, by pool id; nil when it has none), in
	// every Mode: ReservedHighWater, ActiveAtPeak, Allocations and
	// FirstAlloc, with Known.History and HighWater; their figures at the
	// dump are zero (stats.CurrentPools gives them, from the file). A
	// segment is counted in a private pool while the machine gives it
	// that pool (segments still in the file; trace entries carry no pool
	// id).
	Pools []stats.PoolFigures

	// Coverage is the device's [TraceCoverage], from the replay's first
	// pass over the trace.
	Coverage Coverage

	// Rounding is the allocator's rounding rule inferred from the file
	// (allocator.InferRounding); the replay follows it (CUDA's when unknown, and then
	// Stats.Known.History is Unknown).
	Rounding allocator.InferredRounding

	// peaks are the allocated and reserved bytes at PeakIndex and
	// PeakReservedIndex: see [Result.Peaks].
	peaks PeakBytes

	snap *snapshot.Snapshot
	seed []snapshot.Segment // the state before the first entry
	cfg  replayConfig
	// lastPoolAlloc is, for each address of a file's segment in a private
	// pool, the last segment_alloc entry there (see LastPoolAllocs).
	lastPoolAlloc map[snapshot.Addr]int
}

// LastPoolAllocs returns, for each address where the file holds a
// segment of device in a private pool (a CUDA graph's or a MemPool's), the
// index of the last segment_alloc or segment_map entry of trace at that
// address (addresses without one are left out; nil when the device has no
// private pool). Trace entries carry no pool id: the file's segment is that
// last one, and an earlier segment at the same address was freed and its
// pool is not known. The replay (SegmentAllocPool) and the what-if
// simulation (analyze/whatif) both take a private pool's segments from it.
func LastPoolAllocs(segs []snapshot.Segment, device int, trace []snapshot.TraceEntry) map[snapshot.Addr]int {
	var out map[snapshot.Addr]int
	for k := range segs {
		if fs := &segs[k]; fs.Device == device && !fs.Pool.IsDefault() {
			if out == nil {
				out = map[snapshot.Addr]int{}
			}
			out[fs.Address] = -1
		}
	}
	if out == nil {
		return nil
	}
	for i := range trace {
		if e := &trace[i]; e.Action == snapshot.ActionSegmentAlloc || e.Action == snapshot.ActionSegmentMap {
			if _, ok := out[e.Addr]; ok {
				out[e.Addr] = i
			}
		}
	}
	for a, i := range out {
		if i < 0 {
			delete(out, a)
		}
	}
	return out
}

// Config returns the allocator settings the replay followed (from the
// file's allocator_settings; torch's defaults without them).
func (r *Result) Config() allocator.Config { return r.cfg.Config }

// InitialState returns the allocator state before the first trace entry as
// segments of the device (nil when nothing was reserved then: the trace
// starts at the allocator's first allocation). For a seeded replay it is
// the state reconstructed backwards from the file's segments. The slice is
// shared: callers must not change it.
func (r *Result) InitialState() []snapshot.Segment { return r.seed }

// PeakBytes are the figures at a trace's peaks, bytes.
type PeakBytes struct {
	// Allocated is allocated_bytes.all.current at PeakIndex, and
	// ReservedAtAllocated reserved_bytes.all.current there; Reserved is
	// reserved_bytes.all.current at PeakReservedIndex.
	Allocated, ReservedAtAllocated, Reserved int64
}

// Peaks returns the bytes at PeakIndex and PeakReservedIndex, for a
// Result of a Full or Peaks [Run] with trace entries; zeros otherwise.
func (r *Result) Peaks() PeakBytes { return r.peaks }

// Allocation is one block's life as an allocation: from its alloc entry (or
// from before the trace) to its free_requested and free_completed entries
// (or to the end of the trace). Indexes are trace entry indexes of
// s.Traces[Result.Device].
type Allocation struct {
	// Addr is the block's device address.
	Addr snapshot.Addr
	// Size is the block's size in bytes (the rounded request, or the
	// whole free block when the allocator did not split it).
	Size int64
	// Requested is the caller's unrounded size in bytes.
	Requested int64
	// Stream is the cudaStream_t value the block belongs to.
	Stream uint64
	// Pool is the private pool id of the block's segment ((0, 0) for the
	// default pools). Trace entries carry no pool id, so it is only known
	// for segments still present in the file; a private-pool segment
	// released before the dump reads as (0, 0).
	Pool snapshot.PoolID
	// Large is true for the large pool (blocks over 1 MiB).
	Large bool
	// Stack is the allocation stack: the alloc entry's frames, or the
	// block's frames in the file for a block alive before the trace.
	Stack snapshot.StackID
	// AllocIndex is the alloc entry, -1 when the block was alive before
	// the first entry.
	AllocIndex int
	// FreeRequested is the free_requested entry, -1 when the block was not
	// freed by the end of the trace (or, for a block already pending free
	// when the trace began, when that happened before the first entry).
	FreeRequested int
	// FreeCompleted is the free_completed entry, -1 when the block is still
	// active at the end of the trace.
	FreeCompleted int
	// FreedBefore is true for a block already pending free
	// (active_pending_free) before the first entry: the program freed it,
	// so it is not alive, though still active.
	FreedBefore bool
	// Annotations are the user_metadata of the annotate entries
	// (torch.cuda.memory._annotate_tensor, pytorch/pytorch#190575) that
	// named this allocation while it was allocated, in trace order. They
	// accumulate: a later one does not replace an earlier one
	// (torch/cuda/memory.py _annotate_memory).
	Annotations []Annotation
}

// Annotation is one annotate entry attached to an Allocation.
type Annotation struct {
	// Index is the annotate entry.
	Index int
	// Metadata is its user_metadata, an index into Snapshot.Strings.
	Metadata snapshot.StrID
}

// AnnotationLabel joins the user_metadata of an allocation's annotate
// entries into one label, in trace order, "; " between them; "" when
// there are none. Annotations accumulate in PyTorch (torch/cuda/memory.py
// _annotate_memory), so every one is shown, not only the last.
func AnnotationLabel(annotations []string) string {
	return strings.Join(annotations, "; ")
}

// AnnotationsAt returns the user_metadata of a's annotations made at or
// before entry i, in trace order (nil when none).
func (a *Allocation) AnnotationsAt(s *snapshot.Snapshot, i int) []string {
	var out []string
	for _, n := range a.Annotations {
		if n.Index <= i && int(n.Metadata) < len(s.Strings) {
			out = append(out, s.Strings[n.Metadata])
		}
	}
	return out
}

// Alive reports whether the allocation is still allocated (not yet
// free_requested) after entry i; i = -1 asks about the state before the
// first entry.
func (a *Allocation) Alive(i int) bool {
	if a.AllocIndex > i || a.FreedBefore {
		return false
	}
	if a.FreeRequested >= 0 {
		return a.FreeRequested > i
	}
	return a.FreeCompleted < 0 || a.FreeCompleted > i
}

// EndCheck is the comparison of the replayed end state with the segments
// and blocks the file holds for the device.
type EndCheck struct {
	// Equal is true when every segment (address, size, stream, pool kind,
	// expandability) and every block (address, size, state, and requested
	// size of active blocks) agree, and the replay met no inconsistency.
	Equal bool
	// Segments and Blocks count what the file holds for the device.
	Segments, Blocks int
	// Differences describes each disagreement in a line, in address order
	// (at most maxDifferences lines, then a count of the rest).
	Differences []string
}

// State is the allocator state of one device after one trace entry: what
// [Result.StateAt] returns.
type State struct {
	Device int
	// Index is the trace entry after which the state is taken; -1 is the
	// state before the first entry.
	Index int
	// Entry is that trace entry (nil for Index -1).
	Entry *snapshot.TraceEntry
	// Stats are the memory_stats() figures at that moment, with the same
	// exactness as Result.Stats.
	Stats stats.MemoryStats
	// Segments are the segments, in address order, each with its blocks.
	Segments []StateSegment
	// Free summarises the free (inactive) blocks per pool and stream,
	// sorted by private pool id, large pool first, then stream.
	Free []FreeSpace
	// OOM describes the failed request when Entry is an oom entry.
	OOM *OOMInfo
}

// StateSegment is one segment of a State: one cudaMalloc, or one
// contiguous mapped range of an expandable segment.
type StateSegment struct {
	Addr       snapshot.Addr
	Size       int64 // bytes reserved; the blocks tile [Addr, Addr+Size)
	Stream     uint64
	Large      bool
	Pool       snapshot.PoolID
	Expandable bool
	// Stack is the segment_alloc entry's frames (or the file's segment
	// frames for a segment older than the trace).
	Stack  snapshot.StackID
	Blocks []StateBlock
}

// StateBlock is one block of a StateSegment.
type StateBlock struct {
	Addr snapshot.Addr
	Size int64
	// Requested is the requested size of an active block, 0 for an
	// inactive one.
	Requested int64
	State     snapshot.BlockState
	Stack     snapshot.StackID
	// Alloc indexes Result.Allocs for an active block, -1 for an inactive
	// one.
	Alloc int
}

// FreeSpace is the fragmentation of one (pool, stream): the free bytes
// inside its segments and its largest free block.
type FreeSpace struct {
	Large  bool
	Pool   snapshot.PoolID
	Stream uint64
	// FreeBytes is the sum of the inactive blocks; Blocks their number.
	FreeBytes int64
	Blocks    int
	// Largest is the largest inactive block, in bytes.
	Largest int64
	// Reserved is the sum of the segment sizes.
	Reserved int64
}

// OOMInfo explains an oom entry: the request that failed against what was
// free.
type OOMInfo struct {
	// Size is the rounded request that failed (the entry's size), bytes.
	Size int64
	// Large is true when the request was for the large pool.
	Large bool
	// DeviceFree is the free device memory cudaMemGetInfo reported, bytes.
	DeviceFree int64
	Stream     uint64
	// LargestFree is the largest inactive block of the request's pool
	// (default pools) and stream, the largest block the allocator could
	// have reused; FreeInPool the sum of that pool's inactive blocks.
	LargestFree int64
	FreeInPool  int64
}

// StateAt returns the allocator state after trace entry i (i = -1: before
// the first entry). It replays from the seeded initial state up to i, so
// it costs one pass over the first i+1 entries. After the last entry of a
// replay that does not end in the file's segments (Check not Equal), it is
// the file's state (blocks there carry Alloc -1).
func (r *Result) StateAt(i int) (*State, error) {
	trace := DeviceTrace(r.snap, r.Device)
	if i < -1 || i >= len(trace) {
		return nil, fmt.Errorf("state of device %d: entry %d out of range [-1, %d)", r.Device, i, len(trace))
	}
	x := r.newRunner(false)
	x.runTo(i)
	return r.stateOf(x, i), nil
}

// stateOf builds the State after entry i from a runner that has applied
// the entries up to i.
func (r *Result) stateOf(x *runner, i int) *State {
	return r.finishState(r.machineState(x.m, i, nil))
}

// finishState completes a State that machineState built, once r's replay
// is done: the figures and exactness that only the whole replay knows.
func (r *Result) finishState(st *State) *State {
	i := st.Index
	n := len(DeviceTrace(r.snap, r.Device))
	if i == n-1 && !r.Check.Equal {
		// The replay does not end in the file's segments: at the end the
		// file is the truth, and every view shows the same state.
		segs := r.deviceSegments()
		blocks := 0
		for k := range segs {
			blocks += len(segs[k].Blocks)
		}
		f := newMachine(&r.cfg, mapHint(blocks))
		f.track = true
		f.load(segs, r.Device)
		st = r.machineState(f, i, nil)
		st.Stats = r.Stats
	}
	st.Stats.Device = r.Device
	st.Stats.MaxSplitSize = r.Stats.MaxSplitSize
	st.Stats.Known = r.Stats.Known
	if i < n-1 && st.Stats.Known.History != stats.Exact {
		// Before the end every figure is replayed: as trusted as the
		// history.
		st.Stats.Known.Current = st.Stats.Known.History
	}
	return st
}

// machineState builds the State after entry i from m, the replayed state
// there: its segments and blocks, free space, OOM and m's figures. It
// reads nothing of r that its replay fills in (see finishState), so it
// can run while that replay does. With fileSeg (the runner's), a segment
// still in the file takes its private pool id from there, as runTo sets
// it at the end of a pass, without changing m; nil: m's pools are taken
// as they are.
func (r *Result) machineState(m *machine, i int, fileSeg map[snapshot.Addr]*snapshot.Segment) *State {
	trace := DeviceTrace(r.snap, r.Device)
	st := &State{Device: r.Device, Index: i, Stats: m.st}
	if i >= 0 {
		st.Entry = &trace[i]
	}
	type freeKey struct {
		pool   snapshot.PoolID
		large  bool
		stream uint64
	}
	free := map[freeKey]*FreeSpace{}
	for _, si := range m.liveSegments() {
		s := &m.segs[si]
		pool := s.pool
		if fs := fileSeg[s.addr]; fs != nil && fs.TotalSize == s.size && s.expandable {
			pool = fs.Pool
		}
		ss := StateSegment{
			Addr: s.addr, Size: s.size, Stream: s.stream, Large: s.large, Pool: pool,
			Expandable: s.expandable, Stack: s.stack, Blocks: make([]StateBlock, 0, s.nblocks),
		}
		k := freeKey{pool, s.large, s.stream}
		fs := free[k]
		if fs == nil {
			fs = &FreeSpace{Large: s.large, Pool: pool, Stream: s.stream}
			free[k] = fs
		}
		fs.Reserved += s.size
		for b := s.head; b >= 0; b = m.blocks[b].next {
			blk := &m.blocks[b]
			ss.Blocks = append(ss.Blocks, StateBlock{
				Addr: blk.addr, Size: blk.size, Requested: blk.req, State: blk.state,
				Stack: blk.stack, Alloc: int(blk.alloc),
			})
			if blk.state == snapshot.StateInactive {
				fs.FreeBytes += blk.size
				fs.Blocks++
				fs.Largest = max(fs.Largest, blk.size)
			}
		}
		st.Segments = append(st.Segments, ss)
	}
	st.Free = make([]FreeSpace, 0, len(free))
	for _, fs := range free {
		st.Free = append(st.Free, *fs)
	}
	slices.SortFunc(st.Free, func(a, b FreeSpace) int {
		if c := cmpPool(a.Pool, b.Pool); c != 0 {
			return c
		}
		if a.Large != b.Large {
			if a.Large {
				return -1
			}
			return 1
		}
		return cmpUint(a.Stream, b.Stream)
	})
	if st.Entry != nil && st.Entry.Action == snapshot.ActionOOM {
		e := st.Entry
		o := &OOMInfo{Size: e.Size, Large: !allocator.IsSmall(e.Size), DeviceFree: e.DeviceFree(), Stream: e.Stream}
		for _, fs := range st.Free {
			if fs.Pool.IsDefault() && fs.Large == o.Large && fs.Stream == o.Stream {
				o.LargestFree = max(o.LargestFree, fs.Largest)
				o.FreeInPool += fs.FreeBytes
			}
		}
		st.OOM = o
	}
	return st
}

// IndexAtTime returns the last trace entry whose time_us is at most us
// (microseconds since the Unix epoch), or -1 when every entry is later or
// the trace is empty.
func (r *Result) IndexAtTime(us int64) int {
	trace := DeviceTrace(r.snap, r.Device)
	j, _ := slices.BinarySearchFunc(trace, us+1, func(e snapshot.TraceEntry, t int64) int { return cmp.Compare(e.TimeUS, t) })
	return j - 1
}

// replayConfig is the allocator's configuration the replay follows (the
// file's allocator_settings, with the rounding rule inferred from the file)
// and what the replay reads from the shape of the trace.
type replayConfig struct {
	allocator.Config
	// impliedFreeRequested is true when the trace has free_completed
	// entries and no free_requested entry at all: it was recorded with
	// _record_memory_history(skip_actions=["free_requested"])
	// (torch/cuda/memory.py, PyTorch 2.10+), so each free_completed also
	// stands for the free_requested torch did not record.
	impliedFreeRequested bool
}

// newReplayConfig returns the configuration for replaying trace, one
// device's trace of s, written by an allocator that rounds by rule.
func newReplayConfig(s *snapshot.Snapshot, trace []snapshot.TraceEntry, rule allocator.RoundingRule) replayConfig {
	c := replayConfig{Config: allocator.FromSettings(s.Settings), impliedFreeRequested: SkipsFreeRequested(trace)}
	if rule == allocator.RoundNPU {
		c.Rounding = allocator.NPURounding{}
	}
	return c
}

// SkipsFreeRequested reports whether trace looks recorded with
// skip_actions=["free_requested"]: free_completed entries and no
// free_requested entry.
func SkipsFreeRequested(trace []snapshot.TraceEntry) bool {
	completed := false
	for i := range trace {
		switch trace[i].Action {
		case snapshot.ActionFreeRequested:
			return false
		case snapshot.ActionFreeCompleted:
			completed = true
		}
	}
	return completed
}
