// Package snapshot decodes the CUDA memory snapshots PyTorch writes
// (torch.cuda.memory._dump_snapshot() pickles, the bare segment lists of
// torch.cuda.memory_snapshot(), the same structures stored as JSON, gzip or
// xz compressed) into a compact, typed model.
//
// The package owns the file format and nothing else: it never prints, never
// exits, and never executes pickle globals. Pickles are read by the machine
// of package snapshot/pickle, which knows no snapshot: this package
// converts its values into the model (convert.go) and takes the trace
// entries as the machine appends them (entries.go). Analysis lives in the
// analyze packages.
//
// Field names follow PyTorch's own (torch/cuda/memory.py TypedDicts
// _Segment, _Block, _TraceEntry, _Frame and torch/csrc/cuda/memory_snapshot.cpp).
// Sizes are bytes (int64), times are microseconds since the Unix epoch
// (int64), addresses are device virtual addresses (Addr).
package snapshot

import (
	"fmt"
	"slices"
)

// Addr is a device virtual address as PyTorch records it (a uint64; PyTorch
// pickles it as a Python int).
type Addr uint64

// String returns the address in hex, as _memory_viz and MemoryViz print it.
func (a Addr) String() string { return fmt.Sprintf("0x%x", uint64(a)) }

// StackID indexes Snapshot.Stacks. StackID 0 is the empty stack: no frames
// were recorded (or the key was absent).
type StackID int32

// NoStack is the StackID of an empty or absent frame list.
const NoStack StackID = 0

// FrameID indexes Snapshot.Frames.
type FrameID int32

// StrID indexes Snapshot.Strings. StrID 0 is the empty string.
type StrID uint32

// Frame is one entry of a recorded stack: from {"filename", "line", "name"}.
// C++ frames (stacks="all") carry Line 0 and a Filename of "??", "" or a
// basename. FX fields (fx_node_op, …) are not kept.
type Frame struct {
	Filename string
	Line     int64
	Name     string
}

// Snapshot is one decoded snapshot file.
//
// Invariants after Decode: every StackID in the model is < len(Stacks);
// every FrameID is < len(Frames); Stacks[0] is empty; Strings[0] is "".
type Snapshot struct {
	// Format describes how the file was encoded.
	Format Format

	// Legacy is true when the file holds a bare list of segments
	// (torch.cuda.memory_snapshot(), or PyTorch 1.13's _snapshot()).
	Legacy bool

	// Segments are all segments of all devices, grouped by device in
	// ascending order, in file order within a device (PyTorch sorts them
	// by device then address, so this is file order). From
	// snapshot["segments"].
	Segments []Segment

	// Traces holds each device's trace entries, oldest first, indexed by
	// device ordinal. From snapshot["device_traces"]. Its length is the
	// number of devices the allocator was initialised for; a file without
	// device_traces has none.
	Traces [][]TraceEntry

	// HasDeviceTraces is true when the file has a device_traces key.
	HasDeviceTraces bool

	// Settings is snapshot["allocator_settings"], nil when absent (PyTorch
	// before 2.3, or a legacy list).
	Settings *AllocatorSettings

	// Annotations is snapshot["external_annotations"] (record_function
	// ranges), in file order. HasAnnotations tells whether the key existed.
	Annotations    []Annotation
	HasAnnotations bool

	// Frames is the table of distinct frames; Stacks the table of distinct
	// stacks, each a list of FrameIDs innermost first (allocator call site
	// first, <module> last), as PyTorch records them.
	Frames []Frame
	Stacks [][]FrameID

	// Strings is the table of short strings referenced by StrID
	// (compile_context, user_metadata).
	Strings []string

	// UnknownActions names the actions this package does not know, in order
	// of first appearance: Action ActionFirstUnknown+i is UnknownActions[i].
	UnknownActions []string

	// TopLevelKeys are the keys of the top-level dict, in file order.
	TopLevelKeys []string

	// Unknown counts keys, block states and trace actions this decoder does
	// not know (from newer PyTorch), by a path such as
	// "device_traces[].pool_id" or "action:annotate". Sorted by path.
	Unknown []Count

	// Fields counts the known keys the file holds, by the same kind of
	// path ("segments[].blocks[].history", "device_traces[][].user_metadata"),
	// sorted by path: which optional fields a file carries tells its
	// PyTorch version and recording options.
	Fields []Count

	// Warnings are non-fatal oddities met while decoding, sorted.
	Warnings []string

	// HostSegments and HostTraces are snapshot["host_segments"] and
	// snapshot["host_traces"]: the pinned host memory allocator's segments
	// and trace entries (PyTorch after 2.11, pytorch/pytorch#182407,
	// _record_memory_history(record_pinned_host_memory=True)), in the
	// schema of segments and device_traces. PyTorch writes host_traces as
	// one flat list (THCPModule_memorySnapshot, torch/csrc/cuda/Module.cpp);
	// a list of lists is read as one list, in order. HasHostTraces tells
	// whether either holds anything: PyTorch writes both keys, empty, in
	// every snapshot when host recording is off (TopLevelKeys tells whether
	// they were there).
	HostSegments  []Segment
	HostTraces    []TraceEntry
	HasHostTraces bool

	// InactiveBlocksMissing and SegmentsFromTrace are set by
	// analyze.Complete, never by the decoder: the blocks lists kept active
	// blocks only and the gaps were filled with inactive blocks; the file
	// had no segments and Segments is the end state of the trace.
	InactiveBlocksMissing bool
	SegmentsFromTrace     bool
	// ForceRounding is set by the caller, never the decoder: "cuda" or
	// "npu" makes analyze.InferRounding take that allocator's rounding
	// rule whatever the file shows (snapview's --rounding); "" infers it.
	ForceRounding string
	// NoRequestedSize lists, ascending, the devices with an active block
	// that had neither requested_size nor a PyTorch 2.0 history[0].real_size
	// (files from before PyTorch tracked requests): such a block's
	// RequestedSize is its Size, an upper bound on what was requested, not
	// the request. Set by the decoder.
	NoRequestedSize []int
	// byDevice is set when Segments are grouped by device, ascending (the
	// decoder groups them), so that DeviceSegments can search.
	byDevice bool
}

// Count is a name and how often it was seen.
type Count struct {
	Name  string
	Count int
}

// Format describes the container of a snapshot file.
type Format struct {
	// Encoding is "pickle" or "json".
	Encoding string
	// PickleProtocol is the pickle protocol (2..5); 0 for JSON.
	PickleProtocol int
	// Compression is "", "gzip" or "xz".
	Compression string
	// Bytes is the size of the decoded (decompressed) stream.
	Bytes int64
}

// PoolID is a segment's private pool id, segment["segment_pool_id"]: (0, 0)
// for the default pools, (n, 0) for CUDA-graph pools and (0, n) for user
// MemPools.
type PoolID [2]int64

// IsDefault reports whether p is the default (non-private) pool.
func (p PoolID) IsDefault() bool { return p == PoolID{} }

// String formats the pool id as PyTorch's tuple repr.
func (p PoolID) String() string { return fmt.Sprintf("(%d, %d)", p[0], p[1]) }

// Segment is one cudaMalloc (or one contiguous mapped range of an
// expandable segment). From an element of snapshot["segments"].
type Segment struct {
	Device  int
	Address Addr
	// TotalSize is segment["total_size"], bytes reserved; the blocks tile
	// [Address, Address+TotalSize).
	TotalSize int64
	// AllocatedSize, ActiveSize and RequestedSize are the file's own sums
	// (bytes) over active_allocated blocks, active_* blocks, and the
	// requested_size of active_* blocks. Where the file lacks them (older
	// PyTorch) they are computed from the blocks.
	AllocatedSize int64
	ActiveSize    int64
	RequestedSize int64
	// Stream is the cudaStream_t value as an integer; 0 is the default
	// stream.
	Stream uint64
	// Type is segment["segment_type"]: "small" or "large" ("" when absent).
	Type string
	// Pool is segment["segment_pool_id"].
	Pool PoolID
	// Expandable is segment["is_expandable"].
	Expandable bool
	// Stack is the stack at segment creation (segment["frames"]).
	Stack  StackID
	Blocks []Block
}

// BlockState is the state of a block: segment["blocks"][i]["state"].
type BlockState uint8

// Block states, as PyTorch spells them.
const (
	StateUnknown BlockState = iota
	// StateActiveAllocated: a live tensor ("active_allocated").
	StateActiveAllocated
	// StateActivePendingFree: freed by the user but still used by another
	// stream ("active_pending_free", documented as "active_awaiting_free").
	StateActivePendingFree
	// StateInactive: cached free memory ("inactive").
	StateInactive
)

// String returns PyTorch's spelling of the state.
func (s BlockState) String() string {
	switch s {
	case StateActiveAllocated:
		return "active_allocated"
	case StateActivePendingFree:
		return "active_pending_free"
	case StateInactive:
		return "inactive"
	}
	return "unknown"
}

// Active reports whether the block counts as active (allocated or pending
// free).
func (s BlockState) Active() bool {
	return s == StateActiveAllocated || s == StateActivePendingFree
}

// Block is one block of a segment.
type Block struct {
	// Address is block["address"], or, for PyTorch 2.0 files without it,
	// the segment address plus the sizes of the blocks before it.
	Address Addr
	// Size is the rounded block size in bytes.
	Size int64
	// RequestedSize is the caller's unrounded size in bytes. PyTorch leaves
	// it stale for inactive blocks. For 2.0 files: history[0].real_size.
	RequestedSize int64
	State         BlockState
	// Stack is the allocation stack (block["frames"], or the newest
	// history entry's frames in 2.0 files).
	Stack StackID
}

// Action is a trace entry's action.
type Action uint8

// Trace actions (c10/core/CachingDeviceAllocator.h TraceEntry::Action).
// Values from ActionFirstUnknown on name Snapshot.UnknownActionName entries.
const (
	ActionNone Action = iota
	ActionAlloc
	ActionFreeRequested
	ActionFreeCompleted
	ActionSegmentAlloc
	ActionSegmentFree
	ActionSegmentMap
	ActionSegmentUnmap
	ActionSnapshot
	ActionOOM
	// ActionAnnotate attaches user_metadata to the live allocation at
	// Addr after the fact (torch.cuda.memory._annotate_memory, PyTorch
	// 2.14, pytorch/pytorch#190575); it changes no allocator state.
	ActionAnnotate
	ActionFirstUnknown
)

var actionNames = [...]string{
	ActionNone:          "",
	ActionAlloc:         "alloc",
	ActionFreeRequested: "free_requested",
	ActionFreeCompleted: "free_completed",
	ActionSegmentAlloc:  "segment_alloc",
	ActionSegmentFree:   "segment_free",
	ActionSegmentMap:    "segment_map",
	ActionSegmentUnmap:  "segment_unmap",
	ActionSnapshot:      "snapshot",
	ActionOOM:           "oom",
	ActionAnnotate:      "annotate",
}

// String returns PyTorch's spelling of a known action, or "unknown".
func (a Action) String() string {
	if int(a) < len(actionNames) && a != ActionNone {
		return actionNames[a]
	}
	return "unknown"
}

// ParseAction maps PyTorch's action string to an Action; ok is false for an
// action this package does not know.
func ParseAction(s string) (a Action, ok bool) {
	switch s {
	case "alloc":
		return ActionAlloc, true
	case "free_requested":
		return ActionFreeRequested, true
	case "free_completed":
		return ActionFreeCompleted, true
	case "segment_alloc":
		return ActionSegmentAlloc, true
	case "segment_free":
		return ActionSegmentFree, true
	case "segment_map":
		return ActionSegmentMap, true
	case "segment_unmap":
		return ActionSegmentUnmap, true
	case "snapshot":
		return ActionSnapshot, true
	case "oom":
		return ActionOOM, true
	case "annotate":
		return ActionAnnotate, true
	}
	return ActionNone, false
}

// TraceEntry flags.
const (
	// FlagFrames: the entry had a "frames" key (even an empty one).
	FlagFrames uint8 = 1 << iota
	// FlagTime: the entry had a "time_us" key.
	FlagTime
	// FlagAddr: the entry had an "addr" key.
	FlagAddr
)

// TraceEntry is one entry of device_traces[d]. It is kept compact (48
// bytes): big traces hold millions of them.
type TraceEntry struct {
	// Addr is entry["addr"]: the block, segment or mapped range address (0
	// for snapshot markers). For oom entries it holds entry["device_free"]
	// (bytes free per cudaMemGetInfo), as PyTorch stores both in the same
	// C++ slot; use DeviceFree.
	Addr Addr
	// Size is entry["size"] in bytes: the unrounded request for alloc, the
	// block's requested_size for free_requested/free_completed, the segment
	// or range size for segment_*, the rounded request for oom.
	Size int64
	// Stream is the cudaStream_t value.
	Stream uint64
	// TimeUS is entry["time_us"], microseconds since the Unix epoch; 0 when
	// absent (PyTorch before 2.2).
	TimeUS int64
	// Stack is entry["frames"].
	Stack StackID
	// CompileContext and UserMetadata index Snapshot.Strings.
	CompileContext StrID
	UserMetadata   StrID
	Action         Action
	Flags          uint8
}

// DeviceFree returns the free device memory (bytes) an oom entry recorded,
// or 0 for other actions.
func (e *TraceEntry) DeviceFree() int64 {
	if e.Action == ActionOOM {
		return int64(e.Addr)
	}
	return 0
}

// Annotation is one entry of snapshot["external_annotations"]: a
// record_function range start or end.
type Annotation struct {
	Stage  string // "START" or "END"
	Name   string
	Device int
	TimeUS int64
}

// AllocatorSettings is snapshot["allocator_settings"].
type AllocatorSettings struct {
	// Conf is PYTORCH_CUDA_ALLOC_CONF as last applied.
	Conf string
	// MaxSplitSize is max_split_size in bytes; -1 means unlimited.
	MaxSplitSize int64
	// GarbageCollectionThreshold is garbage_collection_threshold (0 = off).
	GarbageCollectionThreshold float64
	// ExpandableSegments is expandable_segments.
	ExpandableSegments bool
	// RoundupPower2Divisions maps the start of each power-of-two interval
	// in MiB ("1", "2", … "32768" in the file) to its number of divisions;
	// 0 means off.
	RoundupPower2Divisions map[int64]int64
	// Raw holds each key as a display string, sorted by key, for `info`:
	// the first 1024 keys of the file (the others are counted in a
	// warning).
	Raw []KeyValue
}

// KeyValue is one setting as text.
type KeyValue struct {
	Key, Value string
}

// ActionName returns the action string of an Action, known or not.
func (s *Snapshot) ActionName(a Action) string {
	if a < ActionFirstUnknown {
		return a.String()
	}
	i := int(a - ActionFirstUnknown)
	if i < len(s.UnknownActions) {
		return s.UnknownActions[i]
	}
	return "unknown"
}

// Stack returns the frames of a stack, innermost first.
func (s *Snapshot) Stack(id StackID) []FrameID {
	if id <= 0 || int(id) >= len(s.Stacks) {
		return nil
	}
	return s.Stacks[id]
}

// FieldCount returns how many times the file holds the known key at path
// (see Snapshot.Fields).
func (s *Snapshot) FieldCount(path string) int {
	i, ok := slices.BinarySearchFunc(s.Fields, path, func(c Count, p string) int {
		switch {
		case c.Name < p:
			return -1
		case c.Name > p:
			return 1
		}
		return 0
	})
	if !ok {
		return 0
	}
	return s.Fields[i].Count
}

// Devices returns the sorted device ordinals that have segments or trace
// entries.
func (s *Snapshot) Devices() []int {
	seen := map[int]bool{}
	for i := range s.Segments {
		seen[s.Segments[i].Device] = true
	}
	for d, t := range s.Traces {
		if len(t) > 0 {
			seen[d] = true
		}
	}
	out := make([]int, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
