package html

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/snapshot"
)

// The report's inspection panel shows the allocator state at a moment of
// the timeline, as PyTorch's _memory_viz.py does: the stacks holding the
// most bytes and the segments with their blocks. For traces up to
// Options.MaxLiveEntries entries the page computes that state after
// any entry from every allocation's and segment's life (Inspect.Allocs
// and Segments); for longer traces, the replay's exact states at a few
// entries are embedded instead (Inspect.States) and the page says so.

// Inspect is what the page needs to show the allocator state after a
// trace entry.
type Inspect struct {
	// Live is true when Allocs and Segments describe the whole trace: the
	// page can show the state after any entry.
	Live bool
	// Allocs are the allocations: address, size and requested size in
	// bytes, alloc entry (-1: older than the trace), free_requested and
	// free_completed entries (-1: never), stack (index into
	// Report.Stacks, -1 for none). Empty unless Live.
	Allocs [][7]int64
	// Segments are the segments (or mapped ranges of an expandable
	// segment): address, size in bytes, the entry that created it (-1:
	// older than the trace), the entry that released it (-1: never),
	// stream, and 1 for a range of an expandable segment (0 otherwise).
	// Adjacent live ranges of an expandable segment on one stream are one
	// segment, as the allocator joins them. Empty unless Live.
	Segments [][6]int64
	// States are the exact states at some entries (Options.MaxStates
	// entries evenly spread over the trace, the peak and the OOMs), in
	// entry order, when not Live.
	States []InspectState
	// Note says what the panel can show ("any entry", or at which).
	Note string
}

// InspectState is the allocator state after entry Index.
type InspectState struct {
	Index    int
	Segments []Segment
}

// inspect fills d.Inspect for a device with a trace.
func (b *htmlBuilder) inspect(d *DeviceView, res *replay.Result, trace []snapshot.TraceEntry, a *analysis.Page) {
	n := len(trace)
	in := &Inspect{Allocs: [][7]int64{}, Segments: [][6]int64{}, States: []InspectState{}}
	d.Inspect = in
	if n <= b.opt.MaxLiveEntries {
		in.Live = true
		for _, a := range res.Allocs {
			in.Allocs = append(in.Allocs, [7]int64{int64(a.Addr), a.Size, a.Requested,
				int64(a.AllocIndex), int64(a.FreeRequested), int64(a.FreeCompleted), int64(b.stackShort(a.Stack))})
		}
		in.Segments = a.Lives
		in.Note = "Click the timeline to see the allocator state after that entry: the stacks holding the most bytes and every segment with its blocks."
		return
	}
	// Too long to embed: exact states at MaxStates entries spread over
	// the trace, plus the peak and the OOMs (analysis.PageStates).
	for _, st := range a.States {
		hs := InspectState{Index: st.Index, Segments: b.stateSegmentList(st, b.opt.MaxSegments)}
		in.States = append(in.States, hs)
	}
	in.Note = fmt.Sprintf("The trace has %s entries, more than the %s whose history the page embeds: clicking the timeline shows the exact state at the nearest of %d precomputed entries (the peak and every OOM among them). `snapview state --at entry:N` shows any entry.",
		units.Int(n), units.Int(b.opt.MaxLiveEntries), len(a.States))
}

// stateSegmentList converts the segments of an replay.State, largest
// first, at most limit of them.
func (b *htmlBuilder) stateSegmentList(st *replay.State, limit int) []Segment {
	out := make([]Segment, 0, len(st.Segments))
	for _, sg := range st.Segments {
		hs := Segment{Addr: sg.Addr.String(), Size: sg.Size, Stream: sg.Stream, Pool: sg.Pool.String(), Large: sg.Large, Expandable: sg.Expandable}
		for _, bl := range sg.Blocks {
			hs.Blocks = append(hs.Blocks, Block{
				Offset: int64(bl.Addr - sg.Addr), Size: bl.Size, Requested: bl.Requested,
				State: htmlStateName(bl.State), Stack: b.blockStack(bl.State, bl.Stack),
			})
		}
		out = append(out, hs)
	}
	slices.SortStableFunc(out, func(p, q Segment) int { return cmp.Compare(q.Size, p.Size) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// stackShort is stack for stacks only the inspection panel refers to:
// a stack not yet in the table is added with at most htmlShortFrames
// lines, which keeps the page small when thousands of stacks are live at
// some moment.
func (b *htmlBuilder) stackShort(id snapshot.StackID) int {
	if len(b.s.Stack(id)) == 0 {
		return -1
	}
	if i, ok := b.stackIndex[id]; ok {
		return i
	}
	frames := stacks.LinesOf(b.s, id, stacks.LineOptions{Limit: htmlShortFrames, More: "more frames not embedded"})
	b.r.Stacks = append(b.r.Stacks, frames)
	b.stackIndex[id] = len(b.r.Stacks) - 1
	return len(b.r.Stacks) - 1
}

// htmlShortFrames is the most lines of a stack only the inspection panel
// shows.
const htmlShortFrames = 8
