package info

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/snapview/snapview/analyze/internal/addrmap"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// recordHint is the call that records a full history.
const recordHint = "torch.cuda.memory._record_memory_history(max_entries=100000)"

// infoWarnings returns what the inference found worth a warning, in a
// fixed order: an empty file, no history, traces that miss the start,
// replays that disagree with the segments, missing stacks and their
// likely cause (field reports 9, 10, 12, 13, 23), unknown fields.
func infoWarnings(s *snapshot.Snapshot, in *Info) []string {
	var w []string
	rec := &in.Recording
	if len(s.HostTraces) > 0 && rec.Entries == 0 {
		w = append(w, "Pinned host memory only: the file holds the host allocator's history (host_traces) and no device trace, "+
			"as _record_memory_history(record_pinned_host_memory=True, record_cuda=False) records; see Pinned host memory.")
	} else if len(s.Segments) == 0 && rec.Entries == 0 {
		w = append(w, "The file holds no segments and no trace entries: when it was dumped the allocator held no GPU memory and had recorded no event. "+
			"It was dumped before the first CUDA allocation, on a process that never used these devices, or outside the steps it was meant to cover "+
			"(a profiling window of a single step can miss them); dump after the work you want to see.")
	}

	switch {
	case s.Legacy:
		w = append(w, "No history: a bare segment list (torch.cuda.memory_snapshot()) keeps only the state at dump time, never a trace. "+
			"Call "+recordHint+" before the first CUDA allocation and dump with torch.cuda.memory._dump_snapshot(path) to keep the trace.")
	case !s.HasDeviceTraces:
		w = append(w, "No history: the file has no device_traces, only the state at dump time. "+
			"Call "+recordHint+" before the first CUDA allocation, then torch.cuda.memory._dump_snapshot(path).")
	case rec.Enabled == EnabledOff && rec.SegmentStacks > 0:
		w = append(w, "No history at dump time: some segments keep stacks, so recording was on once, but it was stopped before the dump "+
			"(enabled=None clears the trace); peaks, totals and leaks over time are unknown. "+
			"Keep recording on until torch.cuda.memory._dump_snapshot(path) returns.")
	case rec.Enabled == EnabledOff && len(s.Segments) > 0:
		w = append(w, "No history recorded: the file shows the allocator state at dump time (segments and blocks) but no trace and no stacks, "+
			"so peaks, totals, leaks over time and allocation sites are unknown. "+
			"Call "+recordHint+" before the first CUDA allocation, then torch.cuda.memory._dump_snapshot(path).")
	case rec.Enabled == EnabledState:
		w = append(w, "No trace: live blocks carry stacks but the trace holds at most the latest event: recorded with enabled='state' "+
			"(or the pre-2.1 API's default trace_alloc_max_entries=1), or recording was stopped before the dump. "+
			"Peaks, totals and leaks over time are unknown. "+
			"Record with "+recordHint+" (enabled='all' is the default).")
	}

	var wrapped, late []string
	for i := range in.Devices {
		d := &in.Devices[i]
		switch d.Coverage {
		case CoverageWrapped:
			wrapped = append(wrapped, fmt.Sprintf("device %d (%s)", d.Device, units.Plural(d.Entries, "entry")))
		case CoverageLate:
			late = append(late, fmt.Sprintf("device %d (%s)", d.Device, missingStart(d)))
		}
	}
	if len(wrapped) > 0 {
		wrapped = foldNames(wrapped)
		w = append(w, fmt.Sprintf("The trace of %s looks wrapped: it misses the start of the run and its length looks like max_entries, "+
			"so the ring buffer dropped the oldest events. "+
			"Raise max_entries above the number of allocator events of the run.", strings.Join(wrapped, ", ")))
	}
	if len(late) > 0 {
		late = foldNames(late)
		w = append(w, fmt.Sprintf("The trace of %s misses the start of the run: recording started after the first allocations "+
			"(or the ring buffer wrapped at max_entries). "+
			"Call _record_memory_history before the model is built.", strings.Join(late, ", ")))
	}
	var fold deviceWarnings
	for i := range in.Devices {
		d := &in.Devices[i]
		switch {
		case d.ReplayError != "":
			fold.add(d.Device, fmt.Sprintf("the allocator replay failed (%s).", d.ReplayError))
		case d.Replayed && d.Trust.History == stats.Unknown:
			// The one trust rule's verdict (DecideTrust), in its words.
			fold.add(d.Device, fmt.Sprintf("peaks and totals are unknown: %s.", d.Trust.Why))
		}
	}
	w = append(w, fold.lines()...)

	w = append(w, stackWarnings(s, in)...)

	if in.Version.Conflict() {
		w = append(w, "The PyTorch version clues contradict each other: the file may have been converted or edited.")
	}
	if len(s.Unknown) > 0 {
		w = append(w, fmt.Sprintf("The file has fields or actions this snapview does not know (%d kinds; a newer PyTorch?): they were skipped; see Unknown.",
			len(s.Unknown)))
	}
	return w
}

// missingStart says why a trace misses the start.
func missingStart(d *DeviceInfo) string {
	var why []string
	if d.UntracedBlocks > 0 {
		why = append(why, units.Plural(d.UntracedBlocks, "live block")+" it never allocated")
	}
	if d.OrphanFrees > 0 {
		why = append(why, units.Plural(d.OrphanFrees, "free")+" of blocks allocated before it")
	}
	if len(why) == 0 {
		return units.Plural(d.Entries, "entry")
	}
	return units.Plural(d.Entries, "entry") + ": " + strings.Join(why, ", ")
}

// stackWarnings explains missing stacks (field reports 9 and 10).
func stackWarnings(s *snapshot.Snapshot, in *Info) []string {
	rec := &in.Recording
	var w []string
	switch {
	case rec.Frames == 0 && (rec.Enabled == EnabledAll || rec.Enabled == EnabledState):
		w = append(w, "No stacks anywhere: history was recorded with context=None, so no allocation can be traced to code "+
			"(grouping by stack gives a single <no stack recorded> group). Record with context='all' (the default).")
		return w
	case rec.Enabled == EnabledAll && rec.EntriesWithFrames == 0 && rec.Entries > 0:
		w = append(w, "Trace entries carry no stacks (context='state'): only live blocks have them, so frees and leaks over time cannot be traced to code. "+
			"Record with context='all' (the default).")
	}

	// Live blocks without a stack: allocated before the trace, or by a
	// thread without Python frames.
	var stackless, untraced int
	for _, d := range s.Devices() {
		trace := replay.DeviceTrace(s, d)
		allocated := addrmap.New(min(1024, len(trace)))
		for i := range trace {
			if trace[i].Action == snapshot.ActionAlloc {
				allocated.Set(trace[i].Addr, 1)
			}
		}
		lo, hi := s.DeviceSegments(d)
		for i := lo; i < hi; i++ {
			seg := &s.Segments[i]
			if seg.Device != d {
				continue
			}
			for j := range seg.Blocks {
				b := &seg.Blocks[j]
				if !b.State.Active() || b.Stack != snapshot.NoStack {
					continue
				}
				stackless++
				if _, ok := allocated.Get(b.Address); !ok {
					untraced++
				}
			}
		}
	}
	if stackless > 0 && rec.Frames > 0 {
		var causes []string
		if untraced > 0 {
			causes = append(causes, fmt.Sprintf("%s %s allocated while no history was recorded (before _record_memory_history, or after it stopped) "+
				"or %s evicted from the ring buffer", units.Int(untraced), units.Verb(untraced, "was", "were"), units.Verb(untraced, "its alloc was", "their allocs were")))
		}
		if n := stackless - untraced; n > 0 {
			causes = append(causes, fmt.Sprintf("%s %s allocated inside the trace by code without Python frames "+
				"(C++ threads such as the autograd engine in backward, with stacks='python')", units.Int(n), units.Verb(n, "was", "were")))
		}
		w = append(w, fmt.Sprintf("%s %s no stack: %s.", units.OfAll(stackless, rec.LiveBlocks, "live block"),
			units.Verb(stackless, "has", "have"), strings.Join(causes, "; ")))
	}

	if rec.Stacks == StacksPython {
		if n := sumCounts(rec.EmptyStacks); n > 0 {
			w = append(w, fmt.Sprintf("%s %s an empty stack (%s): they come from threads without Python frames "+
				"(the autograd engine in backward, NCCL, the allocator's own frees). Record with stacks='all' to see their C++ frames.",
				units.OfAll(n, rec.Entries, "trace entry"), units.Verb(n, "has", "have"), countList(rec.EmptyStacks)))
		}
	}
	if rec.EntriesWithFrames > 0 {
		var missing []snapshot.Count
		for _, c := range rec.NoFramesKey {
			// snapshot markers never carry frames; unknown actions are
			// reported as unknown.
			if a, ok := snapshot.ParseAction(c.Name); ok && a != snapshot.ActionSnapshot {
				missing = append(missing, c)
			}
		}
		if n := sumCounts(missing); n > 0 {
			w = append(w, fmt.Sprintf("%s %s no frames key (%s): events the allocator starts itself (segment_free from empty_cache, "+
				"an OOM retry or garbage collection) may carry no stack, as with context='alloc' or in older releases.", units.Plural(n, "trace entry"), units.Verb(n, "has", "have"), countList(missing)))
		}
	}
	return w
}

func sumCounts(cs []snapshot.Count) int {
	n := 0
	for _, c := range cs {
		n += c.Count
	}
	return n
}

// countList formats counts as "alloc: 3, free_requested: 2".
func countList(cs []snapshot.Count) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%s: %s", c.Name, units.Int(c.Count))
	}
	return strings.Join(parts, ", ")
}

// foldKeep is how many devices one kind of warning names one by one; a
// file of 100,000 devices that all warn alike gets a few lines, not
// 100,000.
const foldKeep = 3

// foldNames keeps the first foldKeep of names and counts the rest.
func foldNames(names []string) []string {
	if len(names) <= foldKeep+1 {
		return names
	}
	return append(names[:foldKeep:foldKeep], fmt.Sprintf("%d more devices", len(names)-foldKeep))
}

// numberRun is a run of digits (or a hexadecimal number): what a
// warning's kind leaves out.
var numberRun = regexp.MustCompile(`0x[0-9a-fA-F]+|[0-9]+`)

// deviceWarnings are per-device warnings, "Device N: text", folded by
// kind (the text with its numbers left out): the first foldKeep devices of
// a kind in full, the others in one line.
type deviceWarnings struct {
	order []string
	kinds map[string]*deviceWarningKind
}

type deviceWarningKind struct {
	lines []string
	first int
	more  []int
}

func (f *deviceWarnings) add(dev int, text string) {
	key := numberRun.ReplaceAllString(text, "#")
	if f.kinds == nil {
		f.kinds = map[string]*deviceWarningKind{}
	}
	k := f.kinds[key]
	if k == nil {
		k = &deviceWarningKind{first: dev}
		f.kinds[key] = k
		f.order = append(f.order, key)
	}
	if len(k.lines) < foldKeep {
		k.lines = append(k.lines, fmt.Sprintf("Device %d: %s", dev, text))
		return
	}
	k.more = append(k.more, dev)
}

func (f *deviceWarnings) lines() []string {
	var out []string
	for _, key := range f.order {
		k := f.kinds[key]
		out = append(out, k.lines...)
		if n := len(k.more); n > 0 {
			out = append(out, fmt.Sprintf("The same as device %d's warning above on %d more devices (%d to %d).", k.first, n, k.more[0], k.more[n-1]))
		}
	}
	return out
}
