package info

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analyze/internal/addrmap"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// Recording is how torch.cuda.memory._record_memory_history was called,
// as far as the file shows it (snapshot-format.md §1.9). Each field comes
// with the evidence it rests on.
type Recording struct {
	// Enabled is the enabled argument: "all" (a trace), "state" (stacks
	// for live blocks, at most the latest event), "off", or "unknown".
	Enabled    Enabled
	EnabledWhy string
	// Stacks is the stacks argument: "python", "all" (C++ frames too), or
	// "unknown" (no frame anywhere, as with context=None, which records
	// none whatever stacks says).
	Stacks    Stacks
	StacksWhy string
	// Context is the context argument: "all", "alloc", "state", "none",
	// or a pair ("alloc_or_all", "none_or_state") when the file cannot
	// tell them apart, or "unknown".
	Context    Context
	ContextWhy string
	// MaxEntries is the guess at max_entries: exactly MaxEntries when
	// MaxEntriesAtLeast is false (a trace that looks wrapped holds exactly
	// max_entries entries), at least MaxEntries otherwise; 0 when unknown.
	MaxEntries        int
	MaxEntriesAtLeast bool
	MaxEntriesWhy     string
	// SkipActions lists the actions the recording skipped, as far as the
	// trace shows (skip_actions, PyTorch 2.10+, #168183): "free_requested"
	// when free_completed entries come without any free_requested.
	SkipActions    []string
	SkipActionsWhy string

	// Frames counts the distinct frames in the file; CppFrames those that
	// look like C++ (line 0 with a "??" or empty file name, or "::" in
	// the name).
	Frames, CppFrames int
	// Entries counts the trace entries of all devices; EntriesWithFrames
	// those with a frames key; EntriesWithStacks those with a non-empty
	// stack.
	Entries, EntriesWithFrames, EntriesWithStacks int
	// EmptyStacks counts, per action, the entries with a frames key but
	// no frame; NoFramesKey the entries without a frames key.
	EmptyStacks, NoFramesKey []snapshot.Count
	// LiveBlocks counts active blocks of all devices, LiveBlockStacks
	// those with a stack; SegmentStacks counts segments with a stack.
	LiveBlocks, LiveBlockStacks, SegmentStacks int
	// FreesCompared counts free_requested entries whose alloc is in the
	// trace (both with a frames key); FreesSameStack those whose stack
	// equals the alloc's.
	FreesCompared, FreesSameStack int
}

// Enabled is the inferred enabled argument of _record_memory_history.
type Enabled string

// Stacks is the inferred stacks argument of _record_memory_history.
type Stacks string

// Context is the inferred context argument of _record_memory_history.
type Context string

// The values of Enabled, Stacks and Context.
const (
	EnabledAll     Enabled = "all"
	EnabledState   Enabled = "state"
	EnabledOff     Enabled = "off"
	EnabledUnknown Enabled = "unknown"

	StacksPython  Stacks = "python"
	StacksAll     Stacks = "all"
	StacksUnknown Stacks = "unknown"

	ContextAll         Context = "all"
	ContextAlloc       Context = "alloc"
	ContextState       Context = "state"
	ContextNone        Context = "none"
	ContextAllocOrAll  Context = "alloc_or_all"
	ContextNoneOrState Context = "none_or_state"
	ContextUnknown     Context = "unknown"
)

// isCppFrame reports whether f looks like a C++ frame of stacks="all":
// line 0 with a "??" or empty file name, or a "::"-qualified name.
// _profile_to_snapshot's placeholder frames (file "none", line 0) do not
// count.
func isCppFrame(f *snapshot.Frame) bool {
	if f.Line != 0 {
		return false
	}
	return f.Filename == "??" || f.Filename == "" || strings.Contains(f.Name, "::")
}

// cppFrames counts the distinct frames of s that look like C++.
func cppFrames(s *snapshot.Snapshot) int {
	n := 0
	for i := range s.Frames {
		if isCppFrame(&s.Frames[i]) {
			n++
		}
	}
	return n
}

// inferRecording infers the recording options from s and sets the
// Coverage of each device that misses the start to wrapped or started
// late.
func inferRecording(s *snapshot.Snapshot, devices []DeviceInfo) Recording {
	return inferRecordingScanned(s, scanRecording(s), devices)
}

// recordingScan is what inferRecording counts in one pass over every
// trace and the segments, which needs nothing of the devices' replays.
type recordingScan struct {
	r          Recording
	maxEntries int
}

// scanRecording makes inferRecording's pass over s.
func scanRecording(s *snapshot.Snapshot) recordingScan {
	r := Recording{Frames: len(s.Frames), CppFrames: cppFrames(s)}
	var empty, noKey actionTally
	maxEntries := 0
	for _, tr := range s.Traces {
		maxEntries = max(maxEntries, len(tr))
		allocStack := addrmap.New(min(1024, len(tr))) // address -> StackID of its alloc
		for i := range tr {
			e := &tr[i]
			r.Entries++
			if e.Flags&snapshot.FlagFrames == 0 {
				noKey[e.Action]++
				continue
			}
			r.EntriesWithFrames++
			if e.Stack != snapshot.NoStack {
				r.EntriesWithStacks++
			} else {
				empty[e.Action]++
			}
			switch e.Action {
			case snapshot.ActionAlloc:
				allocStack.Set(e.Addr, int32(e.Stack))
			case snapshot.ActionFreeRequested:
				if st, ok := allocStack.Get(e.Addr); ok {
					r.FreesCompared++
					if snapshot.StackID(st) == e.Stack {
						r.FreesSameStack++
					}
					allocStack.Del(e.Addr)
				}
			}
		}
	}
	r.EmptyStacks, r.NoFramesKey = empty.counts(s), noKey.counts(s)

	var liveBlocks, liveStacks, segStacks int
	for i := range s.Segments {
		seg := &s.Segments[i]
		if seg.Stack != snapshot.NoStack {
			segStacks++
		}
		for j := range seg.Blocks {
			if seg.Blocks[j].State.Active() {
				liveBlocks++
				if seg.Blocks[j].Stack != snapshot.NoStack {
					liveStacks++
				}
			}
		}
	}
	r.LiveBlocks, r.LiveBlockStacks, r.SegmentStacks = liveBlocks, liveStacks, segStacks
	return recordingScan{r: r, maxEntries: maxEntries}
}

// inferRecordingScanned is inferRecording given its pass over s.
func inferRecordingScanned(s *snapshot.Snapshot, sc recordingScan, devices []DeviceInfo) Recording {
	r, maxEntries := sc.r, sc.maxEntries
	liveBlocks, liveStacks, segStacks := r.LiveBlocks, r.LiveBlockStacks, r.SegmentStacks
	stateStacks := liveStacks + segStacks

	// enabled
	switch {
	case s.Legacy || !s.HasDeviceTraces:
		r.Enabled = EnabledUnknown
		r.EnabledWhy = "the file has no device_traces (a bare segment list keeps no trace whatever was recorded)"
		if stateStacks > 0 {
			r.EnabledWhy += fmt.Sprintf("; %s blocks and segments carry stacks, so history recording was on", units.Int(stateStacks))
		}
	case r.Entries == 0 && len(s.HostTraces) > 0:
		r.Enabled = EnabledAll
		r.EnabledWhy = fmt.Sprintf("the pinned host memory trace holds %s and no device trace has any: "+
			"record_pinned_host_memory=True with record_cuda=False (PyTorch after 2.11)", units.Plural(len(s.HostTraces), "entry"))
	case r.Entries == 0 && stateStacks == 0:
		r.Enabled = EnabledOff
		r.EnabledWhy = "no trace entries and no stacks on any block or segment"
	case r.Entries == 0 && liveStacks == 0 && segStacks > 0:
		r.Enabled = EnabledOff
		r.EnabledWhy = fmt.Sprintf("no trace entries and no live block with a stack, yet %s: recording was on once and stopped before the dump "+
			"(enabled=None clears the trace)", fmt.Sprintf("%s %s", units.Int(segStacks), units.Verb(segStacks, "segment keeps its stack", "segments keep their stacks")))
	case maxEntries <= 1 && liveStacks > 0:
		r.Enabled = EnabledState
		r.EnabledWhy = fmt.Sprintf("%s %s stacks but no device's trace holds more than one entry: enabled='state' keeps only the latest event (max_entries=1), "+
			"as did the pre-2.1 API's default trace_alloc_max_entries=1 (or recording was stopped before the dump, which clears the trace but leaves blocks their stacks)",
			units.OfAll(liveStacks, liveBlocks, "live block"), units.Verb(liveStacks, "carries", "carry"))
	default:
		r.Enabled = EnabledAll
		r.EnabledWhy = fmt.Sprintf("the trace holds %s", units.Plural(r.Entries, "entry"))
	}

	// stacks
	switch {
	case r.CppFrames > 0:
		r.Stacks = StacksAll
		r.StacksWhy = fmt.Sprintf("%s of %s distinct frames are C++ frames (line 0, file '??' or '::' in the name)", units.Int(r.CppFrames), units.Int(r.Frames))
	case hasUnknownSuffix(s, ".cpp_frames"):
		r.Stacks = StacksAll
		r.StacksWhy = "trace entries carry cpp_frames (the 2.0 record_context_cpp=True form)"
	case r.Frames > 0:
		r.Stacks = StacksPython
		r.StacksWhy = fmt.Sprintf("%s, none of them C++", units.Plural(r.Frames, "distinct frame"))
	case r.Enabled == EnabledAll || r.Enabled == EnabledState:
		r.Stacks = StacksUnknown
		r.StacksWhy = "context=None records no frames, so the file cannot show it (no frame anywhere, though recording was on)"
	default:
		r.Stacks = StacksUnknown
		r.StacksWhy = "no frame anywhere in the file"
	}

	// context
	switch r.Enabled {
	case EnabledOff:
		r.Context = ContextNone
		r.ContextWhy = "nothing was recorded"
	case EnabledState:
		r.Context = ContextState
		r.ContextWhy = "enabled='state' keeps stacks for live blocks only"
	case EnabledUnknown:
		r.Context = ContextUnknown
		r.ContextWhy = "a file without a trace cannot show it"
		if stateStacks > 0 {
			r.ContextWhy += " (state or more: live blocks carry stacks)"
		}
	case EnabledAll:
		if r.Entries == 0 && len(s.HostTraces) > 0 {
			r.Context, r.ContextWhy = ContextAllocOrAll, "the pinned host memory trace carries stacks; the device trace is empty"
			if !slices.ContainsFunc(s.HostTraces, func(e snapshot.TraceEntry) bool { return e.Flags&snapshot.FlagFrames != 0 }) {
				r.Context, r.ContextWhy = ContextNoneOrState, "no entry of the pinned host memory trace has a frames key"
			}
			break
		}
		r.Context, r.ContextWhy = inferContext(&r, liveBlocks, liveStacks, segStacks)
	default:
		r.Context, r.ContextWhy = inferContext(&r, liveBlocks, liveStacks, segStacks)
	}

	r.MaxEntries, r.MaxEntriesAtLeast, r.MaxEntriesWhy = 0, false, "no trace"
	switch r.Enabled {
	case EnabledState:
		r.MaxEntries = 1
		r.MaxEntriesWhy = "enabled='state' records with max_entries=1"
	case EnabledAll:
		inferMaxEntries(&r, devices)
		if s.InactiveBlocksMissing {
			// A window cut from a bigger snapshot: its length says nothing
			// of max_entries.
			longest := 0
			for i := range devices {
				longest = max(longest, devices[i].Entries)
			}
			r.MaxEntries, r.MaxEntriesAtLeast = longest, true
			r.MaxEntriesWhy = fmt.Sprintf("the file is a window of %s cut from a bigger snapshot (its blocks lists lack inactive blocks): "+
				"whether the recording wrapped is not known", units.Plural(longest, "entry"))
		}
		recordedMaxEntries(s, &r, devices)
	}
	r.SkipActions = []string{}
	for _, tr := range s.Traces {
		if replay.SkipsFreeRequested(tr) {
			r.SkipActions = []string{"free_requested"}
			r.SkipActionsWhy = "the trace has free_completed entries and no free_requested: each free_completed stands for both"
			break
		}
	}
	return r
}

// recordedMaxEntries takes max_entries and the overflow flag from
// allocator_settings where PyTorch after 2.11 records them (#179276) as
// single values, over the guesses.
func recordedMaxEntries(s *snapshot.Snapshot, r *Recording, devices []DeviceInfo) {
	if s.Settings == nil {
		return
	}
	for _, kv := range s.Settings.Raw {
		switch kv.Key {
		case "trace_alloc_max_entries":
			if n, err := strconv.Atoi(kv.Value); err == nil && n > 0 {
				r.MaxEntries, r.MaxEntriesAtLeast = n, false
				r.MaxEntriesWhy = "recorded in allocator_settings.trace_alloc_max_entries"
			}
		case "trace_alloc_overflowed":
			if kv.Value != "True" && kv.Value != "False" {
				continue
			}
			for i := range devices {
				d := &devices[i]
				if d.Coverage == CoverageWrapped || d.Coverage == CoverageLate {
					d.Coverage = CoverageLate
					if kv.Value == "True" {
						d.Coverage = CoverageWrapped
					}
				}
			}
		}
	}
}

// inferContext tells the context argument from the trace of a recording
// with enabled='all'.
func inferContext(r *Recording, liveBlocks, liveStacks, segStacks int) (Context, string) {
	if r.EntriesWithFrames == 0 {
		switch {
		case liveStacks+segStacks > 0:
			return ContextState, fmt.Sprintf("no trace entry has a frames key, but %s %s stacks", units.OfAll(liveStacks, liveBlocks, "live block"),
				units.Verb(liveStacks, "carries", "carry"))
		case liveBlocks > 0:
			return ContextNone, fmt.Sprintf("no trace entry has a frames key and none of the %s carries a stack", units.Plural(liveBlocks, "live block"))
		}
		return ContextNoneOrState, "no trace entry has a frames key, and no live block is left to show whether blocks had stacks"
	}
	switch {
	case r.FreesCompared > r.FreesSameStack:
		n := r.FreesCompared - r.FreesSameStack
		return ContextAll, fmt.Sprintf("%s with %s alloc in the trace %s a stack other than %s alloc's (the free site)",
			units.OfAll(n, r.FreesCompared, "free_requested entry"), units.Verb(r.FreesCompared, "its", "their"), units.Verb(n, "carries", "carry"), units.Verb(n, "its", "their"))
	case r.FreesCompared > 0:
		return ContextAlloc, fmt.Sprintf("all %s carry their alloc's stack", units.Plural(r.FreesCompared, "free_requested entry"))
	}
	return ContextAllocOrAll, "trace entries carry stacks, but no free_requested entry has its alloc in the trace to compare with"
}

// inferMaxEntries guesses max_entries from the trace lengths, and marks
// each device that misses the start as wrapped or started late (see
// LooksWrapped). A ring buffer that wrapped holds exactly max_entries
// entries.
func inferMaxEntries(r *Recording, devices []DeviceInfo) {
	lengths := map[int]int{}
	longest := 0
	for i := range devices {
		if n := devices[i].Entries; n > 0 {
			lengths[n]++
			longest = max(longest, n)
		}
	}
	wrapped := 0
	var where []string
	for i := range devices {
		d := &devices[i]
		if d.Coverage != CoverageLate {
			continue
		}
		if ok, why := LooksWrapped(d, lengths[d.Entries]); ok {
			d.Coverage = CoverageWrapped
			wrapped = max(wrapped, d.Entries)
			where = append(where, fmt.Sprintf("device %d holds %s (%s)", d.Device, units.Plural(d.Entries, "entry"), why))
		}
	}
	if wrapped > 0 {
		r.MaxEntries, r.MaxEntriesAtLeast = wrapped, false
		r.MaxEntriesWhy = fmt.Sprintf("the trace of %s and misses the start: it looks wrapped, and a full ring buffer holds exactly max_entries",
			strings.Join(where, "; "))
		return
	}
	r.MaxEntries, r.MaxEntriesAtLeast = longest, true
	if slices.ContainsFunc(devices, func(d DeviceInfo) bool { return d.Coverage == CoverageLate }) {
		r.MaxEntriesWhy = fmt.Sprintf("the longest trace holds %s; a trace that misses the start but does not look full most likely started late",
			units.Plural(longest, "entry"))
	} else {
		r.MaxEntriesWhy = fmt.Sprintf("the longest trace holds %s and did not wrap", units.Plural(longest, "entry"))
	}
}

// hasUnknownSuffix reports whether s.Unknown names a path ending in
// suffix.
func hasUnknownSuffix(s *snapshot.Snapshot, suffix string) bool {
	return slices.ContainsFunc(s.Unknown, func(c snapshot.Count) bool { return strings.HasSuffix(c.Name, suffix) })
}

// LooksWrapped guesses whether a trace that misses the start wrapped
// rather than started late, and says why; sameLength is the number of
// devices whose trace has d's length. The file cannot say (PyTorch 2.11
// keeps no overflow flag), so it takes any of:
//
//   - a round length (see roundEntries), as people choose max_entries;
//   - the same length on several devices, as each has its own ring of
//     max_entries;
//   - at least 3 frees of unseen blocks making up 1% of the entries or
//     more: a late start only frees what was live when recording began,
//     mostly long-lived tensors, while a wrapped ring keeps the frees of
//     every short-lived tensor whose alloc it dropped.
//
// On the corpus this tells the ring_overflow, max_entries=8 and the two
// public wrapped traces from the four late starts.
func LooksWrapped(d *DeviceInfo, sameLength int) (bool, string) {
	n := d.Entries
	switch {
	case n <= 1:
		return false, ""
	case RoundEntries(n):
		return true, "a round number"
	case sameLength > 1:
		return true, fmt.Sprintf("the same length on %d devices", sameLength)
	case d.OrphanFrees >= 3 && d.OrphanFrees*100 >= n:
		return true, fmt.Sprintf("%s frees of blocks it never allocated, too many for a late start", units.Int(d.OrphanFrees))
	}
	return false, ""
}
