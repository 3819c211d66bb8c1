package report

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/snapview/snapview/analyze"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// The report's inspection panel shows the allocator state at a moment of
// the timeline, as PyTorch's _memory_viz.py does: the stacks holding the
// most bytes and the segments with their blocks. For traces up to
// HTMLOptions.MaxLiveEntries entries the page computes that state after
// any entry from every allocation's and segment's life (HTMLInspect.Allocs
// and Segments); for longer traces, the replay's exact states at a few
// entries are embedded instead (HTMLInspect.States) and the page says so.

// HTMLInspect is what the page needs to show the allocator state after a
// trace entry.
type HTMLInspect struct {
	// Live is true when Allocs and Segments describe the whole trace: the
	// page can show the state after any entry.
	Live bool
	// Allocs are the allocations: address, size and requested size in
	// bytes, alloc entry (-1: older than the trace), free_requested and
	// free_completed entries (-1: never), stack (index into
	// HTMLReport.Stacks, -1 for none). Empty unless Live.
	Allocs [][7]int64
	// Segments are the segments (or mapped ranges of an expandable
	// segment): address, size in bytes, the entry that created it (-1:
	// older than the trace), the entry that released it (-1: never),
	// stream, and 1 for a range of an expandable segment (0 otherwise).
	// Adjacent live ranges of an expandable segment on one stream are one
	// segment, as the allocator joins them. Empty unless Live.
	Segments [][6]int64
	// States are the exact states at some entries (HTMLOptions.MaxStates
	// entries evenly spread over the trace, the peak and the OOMs), in
	// entry order, when not Live.
	States []HTMLInspectState
	// Note says what the panel can show ("any entry", or at which).
	Note string
}

// HTMLInspectState is the allocator state after entry Index.
type HTMLInspectState struct {
	Index    int
	Segments []HTMLSegment
}

// inspect fills d.Inspect for a device with a trace.
func (b *htmlBuilder) inspect(d *HTMLDevice, res *analyze.Result, trace []snapshot.TraceEntry, a *deviceAnalysis) {
	n := len(trace)
	in := &HTMLInspect{Allocs: [][7]int64{}, Segments: [][6]int64{}, States: []HTMLInspectState{}}
	d.Inspect = in
	if n <= b.opt.MaxLiveEntries {
		in.Live = true
		for _, a := range res.Allocs {
			in.Allocs = append(in.Allocs, [7]int64{int64(a.Addr), a.Size, a.Requested,
				int64(a.AllocIndex), int64(a.FreeRequested), int64(a.FreeCompleted), int64(b.stackShort(a.Stack))})
		}
		in.Segments = a.lives
		in.Note = "Click the timeline to see the allocator state after that entry: the stacks holding the most bytes and every segment with its blocks."
		return
	}
	// Too long to embed: exact states at MaxStates entries spread over
	// the trace, plus the peak and the OOMs (inspectIndices).
	for _, st := range a.states {
		hs := HTMLInspectState{Index: st.Index, Segments: b.stateSegmentList(st, b.opt.MaxSegments)}
		in.States = append(in.States, hs)
	}
	in.Note = fmt.Sprintf("The trace has %s entries, more than the %s whose history the page embeds: clicking the timeline shows the exact state at the nearest of %d precomputed entries (the peak and every OOM among them). `snapview state --at entry:N` shows any entry.",
		units.Int(n), units.Int(b.opt.MaxLiveEntries), len(a.states))
}

// htmlSegmentLives returns every segment's life on one device: the
// segments before the first entry (from the replay's seeded state), then
// one per segment_alloc or segment_map entry, each closed by the
// segment_free or segment_unmap entry that releases its address.
func htmlSegmentLives(res *analyze.Result, trace []snapshot.TraceEntry) ([][6]int64, error) {
	st, err := res.StateAt(-1)
	if err != nil {
		return nil, err
	}
	out := [][6]int64{}
	var open []int // indexes in out still live
	add := func(addr, size int64, start int, stream uint64, expandable bool) {
		x := int64(0)
		if expandable {
			x = 1
		}
		out = append(out, [6]int64{addr, size, int64(start), -1, int64(stream), x})
		open = append(open, len(out)-1)
	}
	for _, sg := range st.Segments {
		add(int64(sg.Addr), sg.Size, -1, sg.Stream, sg.Expandable)
	}
	for i := range trace {
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			add(int64(e.Addr), e.Size, i, e.Stream, e.Action == snapshot.ActionSegmentMap)
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			// Close every live range the released one overlaps; what an
			// unmap leaves of a range lives on as new ranges.
			lo, hi := int64(e.Addr), int64(e.Addr)+max(e.Size, 1)
			kept := open[:0:0]
			var rest [][4]int64
			for _, k := range open {
				a, b := out[k][0], out[k][0]+out[k][1]
				if b <= lo || a >= hi {
					kept = append(kept, k)
					continue
				}
				out[k][3] = int64(i)
				if a < lo {
					rest = append(rest, [4]int64{a, lo - a, out[k][4], out[k][5]})
				}
				if b > hi {
					rest = append(rest, [4]int64{hi, b - hi, out[k][4], out[k][5]})
				}
			}
			open = kept
			for _, r := range rest {
				add(r[0], r[1], i, uint64(r[2]), r[3] == 1)
			}
		}
	}
	return out, nil
}

// stateSegmentList converts the segments of an analyze.State, largest
// first, at most limit of them.
func (b *htmlBuilder) stateSegmentList(st *analyze.State, limit int) []HTMLSegment {
	out := make([]HTMLSegment, 0, len(st.Segments))
	for _, sg := range st.Segments {
		hs := HTMLSegment{Addr: sg.Addr.String(), Size: sg.Size, Stream: sg.Stream, Pool: sg.Pool.String(), Large: sg.Large, Expandable: sg.Expandable}
		for _, bl := range sg.Blocks {
			hs.Blocks = append(hs.Blocks, HTMLBlock{
				Offset: int64(bl.Addr - sg.Addr), Size: bl.Size, Requested: bl.Requested,
				State: htmlStateName(bl.State), Stack: b.blockStack(bl.State, bl.Stack),
			})
		}
		out = append(out, hs)
	}
	slices.SortStableFunc(out, func(p, q HTMLSegment) int { return cmp.Compare(q.Size, p.Size) })
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
	frames := stackLines(b.s, id, stackLineOptions{Limit: htmlShortFrames, More: "more frames not embedded"})
	b.r.Stacks = append(b.r.Stacks, frames)
	b.stackIndex[id] = len(b.r.Stacks) - 1
	return len(b.r.Stacks) - 1
}

// htmlShortFrames is the most lines of a stack only the inspection panel
// shows.
const htmlShortFrames = 8
