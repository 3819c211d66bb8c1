package report

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/tw"
	analyzeframes "github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// stateBlockMap draws a state's segment as BlockMap does, in width
// characters.
func stateBlockMap(seg *replay.StateSegment, width int) string {
	fs := snapshot.Segment{TotalSize: seg.Size, Blocks: make([]snapshot.Block, len(seg.Blocks))}
	for k, b := range seg.Blocks {
		fs.Blocks[k] = snapshot.Block{Address: b.Addr, Size: b.Size, State: b.State}
	}
	return BlockMap(&fs, width)
}

// stateExpandable counts the view's segments that are mapped ranges of
// expandable segments.
func stateExpandable(v *StateView) int {
	n := 0
	for _, s := range v.Segments {
		if s.Expandable {
			n++
		}
	}
	return n
}

// stateSegmentsLabel names the Totals row of memory_stats()' segment
// count: with expandable segments it counts only cudaMalloc's.
func stateSegmentsLabel(v *StateView) string {
	if stateExpandable(v) > 0 {
		return "cudaMalloc segments"
	}
	return "Segments"
}

// stateStackLineOptions returns the stackLines options for --frames n:
// n frame lines and a "... N more lines" line (stackLines' Limit counts
// that line too, so --frames 1 and 2 printed the same).
func stateStackLineOptions(n int) stacks.LineOptions {
	if n <= 0 {
		return stacks.LineOptions{}
	}
	return stacks.LineOptions{Limit: n + 1, More: "--frames 0 shows them all"}
}

// StateOptions says how much of a state `snapview state` shows.
type StateOptions struct {
	// Top is how many of the largest live allocations and of the
	// allocation stacks holding the most live bytes are listed.
	Top int
	// Frames is the most frame lines printed per stack, as the leak
	// views fold it (see stackLines), not counting the "... N more lines"
	// line that follows when some are left out; 0 prints them all.
	Frames int
}

// StateView is what `snapview state` prints: the allocator state of one
// device after one trace entry, from [replay.Result.StateAt].
type StateView struct {
	// At is the moment as the user named it ("peak", "oom", "end",
	// "entry:12", "time:1.5s").
	At     string
	Device int
	// Index is the trace entry after which the state is taken (-1: before
	// the first entry); Entries is the length of the device's trace.
	Index, Entries int
	// Entry is that entry, nil for Index -1.
	Entry *snapshot.TraceEntry
	// SinceStartUS is the entry's time_us minus the first entry's, -1 when
	// the trace has no timestamps.
	SinceStartUS int64
	// Seeded is replay.Result.Seeded: the trace misses the start of the
	// run, so peaks and totals are lower bounds.
	Seeded bool
	State  *replay.State
	// Segments are the state's segments with their usage and block map.
	Segments []StateSegmentRow
	// Largest are the largest live (active_allocated) allocations, by size.
	Largest []LiveAllocation
	// Stacks are the allocation stacks holding live bytes, most bytes
	// first; Largest refers to them by index.
	Stacks []StackGroup
	// TopStacks is how many of Stacks to list in the table.
	TopStacks int
	// Whatif is the what-if analysis of the device (candidate settings
	// simulated over the whole trace), shown with an OOM; nil when not run.
	Whatif *whatif.Result
	// Explain is explain's findings for the device, shown first at an
	// OOM; nil when not run.
	Explain *verdictview.ExplainDevice
	// PrivatePools are the figures of the device's private pools over the
	// whole trace and at the dump (analysis.File.Pools), whatever the
	// moment; nil when it has none.
	PrivatePools []stats.PoolFigures
	// Host is the file's pinned host memory in JSON (hostview.NewJSON of
	// analysis.File.Host, summary --json's figures), nil when it has none.
	Host *hostview.JSON

	allocs []replay.Allocation // replay.Result.Allocs
	snap   *snapshot.Snapshot
}

// StateSegmentRow is one segment of a StateView.
type StateSegmentRow struct {
	replay.StateSegment
	// Allocated, Pending and Free sum the active_allocated,
	// active_pending_free and inactive blocks; LargestFree is the largest
	// inactive block.
	Allocated, Pending, Free, LargestFree int64
	// Live counts the active_allocated blocks.
	Live int
	// Map is the block map, MapWidth characters (see [BlockMap]).
	Map string
}

// LiveAllocation is one live allocation of a StateView.
type LiveAllocation struct {
	Addr      snapshot.Addr
	Size      int64
	Requested int64
	Large     bool
	Pool      snapshot.PoolID
	Stream    uint64
	// AllocIndex is its alloc entry, -1 when it is older than the trace.
	AllocIndex int
	// Stack indexes StateView.Stacks.
	Stack int
	// Annotations are the user_metadata of the annotate entries made on
	// it up to the moment (torch.cuda.memory._annotate_tensor), in trace
	// order.
	Annotations []string
	// Region is the torch.compile region it was allocated in
	// (frames.CompiledRegion of its alloc entry), "" outside one.
	Region string
}

// StackGroup is the live allocations of one allocation stack.
type StackGroup struct {
	ID    snapshot.StackID
	Count int
	Bytes int64
	// Where names the stack in one line: its innermost user frame (see
	// stacks.Where).
	Where string
	// Lines show the stack, innermost frame first, as the leak views do:
	// the user's frames, runs of torch and standard-library frames folded,
	// the unwinder's, the allocator's and (beside user frames) C++ frames
	// left out; at most StateOptions.Frames lines.
	Lines []string
}

// NewStateView gathers what `snapview state` prints about st, a state of
// r's device, chosen as at.
func NewStateView(s *snapshot.Snapshot, r *replay.Result, st *replay.State, at string, opt StateOptions) *StateView {
	if opt.Top <= 0 {
		opt.Top = 10
	}
	v := &StateView{
		At: at, Device: r.Device, Index: st.Index, Entries: len(r.Allocated), Entry: st.Entry,
		SinceStartUS: -1, Seeded: r.Seeded, State: st, Segments: []StateSegmentRow{},
		Largest: []LiveAllocation{}, Stacks: []StackGroup{}, allocs: r.Allocs, snap: s,
	}
	if r.Device < len(s.Traces) && len(s.Traces[r.Device]) > 0 && st.Entry != nil {
		first := s.Traces[r.Device][0]
		if first.Flags&snapshot.FlagTime != 0 && st.Entry.Flags&snapshot.FlagTime != 0 {
			v.SinceStartUS = st.Entry.TimeUS - first.TimeUS
		}
	}
	groups := map[snapshot.StackID]int{}
	frames := stacks.NewFrameTable(s)
	var live []LiveAllocation
	for _, seg := range st.Segments {
		row := StateSegmentRow{StateSegment: seg}
		fs := snapshot.Segment{TotalSize: seg.Size, Blocks: make([]snapshot.Block, len(seg.Blocks))}
		for k, b := range seg.Blocks {
			fs.Blocks[k] = snapshot.Block{Address: b.Addr, Size: b.Size, State: b.State}
			switch b.State {
			case snapshot.StateActiveAllocated:
				row.Allocated += b.Size
				row.Live++
				g, ok := groups[b.Stack]
				if !ok {
					g = len(v.Stacks)
					groups[b.Stack] = g
					v.Stacks = append(v.Stacks, StackGroup{ID: b.Stack, Where: frames.Where(b.Stack),
						Lines: frames.Lines(b.Stack, stateStackLineOptions(opt.Frames))})
				}
				v.Stacks[g].Count++
				v.Stacks[g].Bytes += b.Size
				la := LiveAllocation{
					Addr: b.Addr, Size: b.Size, Requested: b.Requested, Large: seg.Large, Pool: seg.Pool,
					Stream: seg.Stream, AllocIndex: -1, Stack: g,
				}
				la.AllocIndex = v.allocIndex(b.Alloc)
				if b.Alloc >= 0 && b.Alloc < len(r.Allocs) {
					la.Annotations = r.Allocs[b.Alloc].AnnotationsAt(s, st.Index)
				}
				if tr := replay.DeviceTrace(s, r.Device); la.AllocIndex >= 0 && la.AllocIndex < len(tr) {
					la.Region = analyzeframes.CompiledRegion(s, &tr[la.AllocIndex])
				}
				live = append(live, la)
			case snapshot.StateActivePendingFree:
				row.Pending += b.Size
			default:
				row.Free += b.Size
				row.LargestFree = max(row.LargestFree, b.Size)
			}
		}
		row.Map = BlockMap(&fs, MapWidth)
		v.Segments = append(v.Segments, row)
	}
	// Number the stacks by live bytes, then count, then stack id.
	order := make([]int, len(v.Stacks))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		ga, gb := &v.Stacks[a], &v.Stacks[b]
		if c := cmp.Compare(gb.Bytes, ga.Bytes); c != 0 {
			return c
		}
		if c := cmp.Compare(gb.Count, ga.Count); c != 0 {
			return c
		}
		return cmp.Compare(ga.ID, gb.ID)
	})
	rank := make([]int, len(order))
	sorted := make([]StackGroup, len(order))
	for newIdx, old := range order {
		rank[old] = newIdx
		sorted[newIdx] = v.Stacks[old]
	}
	v.Stacks = sorted
	for i := range live {
		live[i].Stack = rank[live[i].Stack]
	}
	slices.SortFunc(live, func(a, b LiveAllocation) int {
		if c := cmp.Compare(b.Size, a.Size); c != 0 {
			return c
		}
		return cmp.Compare(a.Addr, b.Addr)
	})
	v.Largest = live[:min(len(live), opt.Top)]
	v.TopStacks = min(len(v.Stacks), opt.Top)
	return v
}

// momentLine describes the moment of v in one line.
func (v *StateView) momentLine() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Device %d at %s: ", v.Device, kit.MomentWords(v.At))
	if v.Entry == nil {
		if v.Entries == 0 {
			b.WriteString("no trace entries: the state the file holds")
		} else {
			fmt.Fprintf(&b, "before the first of %s", units.Plural(v.Entries, "trace entry"))
		}
	} else {
		fmt.Fprintf(&b, "after entry %s of %s (%s", units.Int(v.Index), units.Int(v.Entries), v.Entry.Action)
		switch v.Entry.Action {
		case snapshot.ActionOOM:
			fmt.Fprintf(&b, " of %s", units.Bytes(v.Entry.Size))
		case snapshot.ActionSnapshot:
		default:
			fmt.Fprintf(&b, " of %s at %v", units.Bytes(v.Entry.Size), v.Entry.Addr)
		}
		b.WriteString(")")
		if v.SinceStartUS >= 0 {
			fmt.Fprintf(&b, ", %s after the first entry", units.Micros(v.SinceStartUS))
		}
	}
	return b.String()
}

// WriteState writes v as text: the moment, the totals, the OOM (when the
// moment is one), the segments with their block maps, the largest live
// allocations, the stacks holding the most live bytes, and the free space
// per pool and stream.
func WriteState(w io.Writer, v *StateView) error {
	ew := &kit.ErrWriter{W: w}
	if err := writeStateHead(w, ew, v); err != nil {
		return err
	}
	if err := writeStateTotals(w, ew, v); err != nil {
		return err
	}
	if o := v.State.OOM; o != nil {
		writeOOM(ew, v, o)
	}
	for _, section := range []func(io.Writer, *kit.ErrWriter, *StateView) error{
		writeStateSegments, writeStateLargest, writeStateStacks, writeStateFree, writeStatePools,
	} {
		if err := section(w, ew, v); err != nil {
			return err
		}
	}
	return ew.Err
}

// writeStateHead writes the explain findings (at an OOM), the moment and
// what the history can vouch for.
func writeStateHead(w io.Writer, ew *kit.ErrWriter, v *StateView) error {
	if v.Explain != nil {
		if err := verdictview.WriteExplainFindings(w, v.Explain); err != nil {
			return err
		}
		ew.Printf("\n")
	}
	ew.Printf("%s\n", v.momentLine())
	if k := v.State.Stats.Known; v.Entries > 0 && k.History != stats.Exact && !(k.History == stats.LowerBound && v.Seeded) {
		ew.Printf("%s", kit.WrapAt("", "History: "+kit.TrustText(k)+"; the state at a trace entry is replayed from the trace.", 100))
	} else if v.Seeded {
		ew.Printf("The trace starts after the run did: the state before its first entry was rebuilt from the\nsegments in the file, so \"peak\" is the peak within the trace.\n")
	}
	return ew.Err
}

// writeStateTotals writes the Totals table, memory_stats()'s figures at
// the moment per pool, and its notes.
func writeStateTotals(w io.Writer, ew *kit.ErrWriter, v *StateView) error {
	st := v.State
	ew.Printf("\nTotals\n")
	t := kit.NewTable(w, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight)
	t.Header("Metric", "All", "Large pool", "Small pool")
	bytesRow := func(label string, f *[stats.NumPools]stats.Stat) []string {
		return []string{label, units.Bytes(f[stats.PoolAll].Current), units.Bytes(f[stats.PoolLarge].Current), units.Bytes(f[stats.PoolSmall].Current)}
	}
	k := st.Stats.Known
	requestedRow := func(label string, f *[stats.NumPools]stats.Stat) []string {
		return []string{label, kit.RequestedBytes(f[stats.PoolAll].Current, k), kit.RequestedBytes(f[stats.PoolLarge].Current, k),
			kit.RequestedBytes(f[stats.PoolSmall].Current, k)}
	}
	countRow := func(label string, f *[stats.NumPools]stats.Stat) []string {
		return []string{label, units.Int(f[stats.PoolAll].Current), units.Int(f[stats.PoolLarge].Current), units.Int(f[stats.PoolSmall].Current)}
	}
	var free [stats.NumPools]stats.Stat
	for p := range stats.NumPools {
		free[p].Current = st.Stats.ReservedBytes[p].Current - st.Stats.ActiveBytes[p].Current
	}
	rows := [][]string{
		bytesRow("Allocated", &st.Stats.AllocatedBytes),
		bytesRow("Active", &st.Stats.ActiveBytes),
		requestedRow("Requested", &st.Stats.RequestedBytes),
		bytesRow("Reserved", &st.Stats.ReservedBytes),
		bytesRow("Free in segments", &free),
		bytesRow("Non-releasable", &st.Stats.InactiveSplitBytes),
		countRow("Allocations", &st.Stats.Allocation),
		countRow(stateSegmentsLabel(v), &st.Stats.Segment),
	}
	if err := t.Bulk(rows); err != nil {
		return err
	}
	if err := t.Render(); err != nil {
		return err
	}
	if n := kit.RequestedNote(k); n != "" {
		ew.Printf("%s", kit.WrapAt("", n, kit.Width(w)))
	}
	if n := stateExpandable(v); n > 0 {
		ew.Printf("memory_stats() counts cudaMalloc segments only, not the %s mapped by expandable segments.\n",
			units.Plural(n, "range"))
	}

	return ew.Err
}

// writeStateSegments writes the Segments table, its block maps narrowed
// to the width.
func writeStateSegments(w io.Writer, ew *kit.ErrWriter, v *StateView) error {
	if n := stateExpandable(v); n > 0 {
		ew.Printf("\nSegments (%d, %d of them mapped ranges of expandable segments)\n", len(v.Segments), n)
	} else {
		ew.Printf("\nSegments (%d)\n", len(v.Segments))
	}
	if ew.Err != nil {
		return ew.Err
	}
	if len(v.Segments) > 0 {
		header := []string{"Address", "Pool", "Stream", "Size", "Blocks", "Live", "Allocated", "Free", "Largest free", "Map"}
		align := []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight,
			tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft}
		var rows [][]string
		for _, s := range v.Segments {
			rows = append(rows, []string{s.Addr.String(), kit.PoolLabel(s.Large, s.Pool, s.Expandable), strconv.FormatUint(s.Stream, 10),
				units.Bytes(s.Size), units.Int(len(s.Blocks)), units.Int(s.Live), units.Bytes(s.Allocated),
				units.Bytes(s.Free), units.Bytes(s.LargestFree), s.Map})
		}
		// Too wide for the width: a narrower map (down to minMapWidth),
		// then the map, the stream, the largest free block and the block
		// count go.
		mapWidth := MapWidth
		if over := kit.TableWidth(append(rows, header)) - kit.Width(w); over > 0 && MapWidth-over >= minMapWidth {
			mapWidth = MapWidth - over
			for k, sg := range v.Segments {
				rows[k][9] = stateBlockMap(&sg.StateSegment, mapWidth)
			}
		}
		ft := kit.FitColumns(kit.Width(w), header, align, rows, nil, 9, 2, 8, 4)
		if err := ft.Render(w, "snapview segments draws each segment's map"); err != nil {
			return err
		}
		if !slices.Contains(ft.Dropped, "Map") {
			ew.Printf("%s", kit.WrapAt("", fmt.Sprintf("Map: one character per 1/%d of the segment: '#' half or more allocated, '+' some allocated, "+
				"'~' freed but still used by another stream, '.' free.", mapWidth), kit.Width(w)))
		}
	}
	return ew.Err
}

// writeStateLargest writes the largest live allocations.
func writeStateLargest(w io.Writer, ew *kit.ErrWriter, v *StateView) error {
	k := v.State.Stats.Known
	ew.Printf("\nLargest live allocations\n")
	if ew.Err != nil {
		return ew.Err
	}
	if len(v.Largest) == 0 {
		ew.Printf("none\n")
	} else {
		var rows [][]string
		annotated := slices.ContainsFunc(v.Largest, func(a LiveAllocation) bool { return len(a.Annotations) > 0 })
		inRegion := slices.ContainsFunc(v.Largest, func(a LiveAllocation) bool { return a.Region != "" })
		for i, a := range v.Largest {
			entry := "before trace"
			if a.AllocIndex >= 0 {
				entry = units.Int(a.AllocIndex)
			}
			row := []string{strconv.Itoa(i + 1), units.Bytes(a.Size), kit.RequestedBytes(a.Requested, k), a.Addr.String(),
				kit.PoolLabel(a.Large, a.Pool, false), entry, "S" + strconv.Itoa(a.Stack+1)}
			if annotated {
				row = append(row, kit.Escape(replay.AnnotationLabel(a.Annotations)))
			}
			if inRegion {
				row = append(row, kit.Escape(strings.TrimPrefix(a.Region, analyzeframes.RegionPrefix)))
			}
			rows = append(rows, row)
		}
		head := []string{"#", "Size", "Requested", "Address", "Pool", "Alloc entry", "Stack"}
		align := []tw.Align{tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignLeft}
		if annotated {
			// The annotate entries' metadata (torch.cuda.memory._annotate_tensor).
			head, align = append(head, "Annotation"), append(align, tw.AlignLeft)
		}
		if inRegion {
			// The torch.compile region of the alloc entry (compile_context).
			head, align = append(head, "Compiled region"), append(align, tw.AlignLeft)
		}
		ft := kit.FitColumns(kit.Width(w), head, align, rows, nil, 2, 5)
		if err := ft.Render(w, "--json has them"); err != nil {
			return err
		}
	}
	return ew.Err
}

// writeStateStacks writes the live bytes by allocation stack and the
// stacks shown.
func writeStateStacks(w io.Writer, ew *kit.ErrWriter, v *StateView) error {
	if len(v.Stacks) > 0 {
		ew.Printf("\nLive bytes by allocation stack\n")
		if ew.Err != nil {
			return ew.Err
		}
		t := kit.NewTable(w, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignLeft)
		t.Header("Stack", "Allocations", "Bytes", "Allocated at")
		rows := make([][]string, v.TopStacks)
		for i := range v.TopStacks {
			g := &v.Stacks[i]
			rows[i] = []string{"S" + strconv.Itoa(i+1), units.Int(g.Count), units.Bytes(g.Bytes)}
		}
		// The last cell wraps to what the width leaves it.
		where := max(kit.Width(w)-kit.TableWidth(append(rows, []string{"Stack", "Allocations", "Bytes"}))-3, 24)
		for i := range v.TopStacks {
			rows[i] = append(rows[i], strings.Join(kit.WrapLine(v.Stacks[i].Where, where, "  "), "\n"))
			if err := t.Append(rows[i]); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
		ew.Printf("\nStacks (innermost frame first)\n")
		for i, g := range v.Stacks {
			if !v.stackShown(i) {
				continue
			}
			ew.Printf("S%d: %s in %s\n", i+1, units.Bytes(g.Bytes), units.Plural(g.Count, "allocation"))
			for _, l := range g.Lines {
				ew.Printf("    %s\n", l)
			}
		}
	}
	return ew.Err
}

// writeStateFree writes the free space per pool and stream.
func writeStateFree(w io.Writer, ew *kit.ErrWriter, v *StateView) error {
	st := v.State
	ew.Printf("\nFree space per pool and stream\n")
	if ew.Err != nil {
		return ew.Err
	}
	if len(st.Free) == 0 {
		ew.Printf("none\n")
		return ew.Err
	}
	var freeRows [][]string
	for _, f := range st.Free {
		freeRows = append(freeRows, []string{kit.PoolLabel(f.Large, f.Pool, false), strconv.FormatUint(f.Stream, 10), units.Bytes(f.Reserved),
			units.Bytes(f.FreeBytes), units.Int(f.Blocks), units.Bytes(f.Largest)})
	}
	ft := kit.FitColumns(kit.Width(w), []string{"Pool", "Stream", "Reserved", "Free in\nsegments", "Free\nblocks", "Largest\nfree block"},
		[]tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight}, freeRows, nil, 4)
	return ft.Render(w, "")
}

// stackShown reports whether stack i is listed: the top stacks and the
// stacks of the largest allocations.
func (v *StateView) stackShown(i int) bool {
	if i < v.TopStacks {
		return true
	}
	return slices.ContainsFunc(v.Largest, func(a LiveAllocation) bool { return a.Stack == i })
}

// writeOOM explains an OOM: the failed request against what was free.
func writeOOM(ew *kit.ErrWriter, v *StateView, o *replay.OOMInfo) {
	st := v.State
	pool := "small"
	if o.Large {
		pool = "large"
	}
	ew.Printf("\nOOM: a request of %s (%s pool, stream %d) failed\n", units.Bytes(o.Size), pool, o.Stream)
	ew.Printf("  free on the device (cudaMemGetInfo):    %s\n", units.Bytes(o.DeviceFree))
	ew.Printf("  largest cached free block it could use: %s\n", units.Bytes(o.LargestFree))
	ew.Printf("  free in cached blocks of that pool:     %s\n", units.Bytes(o.FreeInPool))
	ew.Printf("  reserved %s, allocated %s\n",
		units.Bytes(st.Stats.ReservedBytes[stats.PoolAll].Current), units.Bytes(st.Stats.AllocatedBytes[stats.PoolAll].Current))
	// The cause, decided as explain decides it (analyze/explain, oomFindings).
	switch {
	case o.FreeInPool >= o.Size && o.LargestFree < o.Size:
		ew.Printf("  The allocator's cache is fragmented: %s was free in cached blocks of that pool, but no block\n"+
			"  was large enough; the device was not full (%s free).\n", units.Bytes(o.FreeInPool), units.Bytes(o.DeviceFree))
	case o.DeviceFree >= o.Size:
		ew.Printf("  The device had %s free, more than the request: the process hit its own limit\n"+
			"  (torch.cuda.set_per_process_memory_fraction), not the device's.\n", units.Bytes(o.DeviceFree))
	default:
		ew.Printf("  The device was full: see the largest live allocations below.\n")
	}
	if r := v.Whatif; r != nil {
		writeOOMWhatif(ew, r)
	}
}

// writeOOMWhatif is the what-if verdict under an OOM (verdictview.WhatifCapVerdict,
// as whatif prints it).
func writeOOMWhatif(ew *kit.ErrWriter, r *whatif.Result) {
	ew.Printf("\nWhat-if (snapview whatif): the requests of the whole trace simulated under other settings;\n")
	ew.Printf("%s", kit.WrapAt("  ", verdictview.WhatifLimitLine(r)+".", kit.Width(ew.W)))
	ew.Printf("%s", kit.WrapAt("  ", verdictview.WhatifSelfCheckLine(r), kit.Width(ew.W)))
	ew.Printf("%s", kit.WrapAt("  ", verdictview.WhatifCapVerdict(r), kit.Width(ew.W)))
}

// The --json schema of `snapview state`. Sizes are bytes, times
// microseconds, addresses integers.
type stateJSON struct {
	Device       int               `json:"device"`
	At           string            `json:"at"`
	Index        int               `json:"index"`
	Entries      int               `json:"entries"`
	Entry        *stateEntryJSON   `json:"entry"`
	SinceStartUS int64             `json:"since_start_us"`
	Seeded       bool              `json:"seeded"`
	Stats        map[string]int64  `json:"memory_stats"`
	Exactness    map[string]string `json:"exactness"`
	History      kit.HistoryJSON   `json:"history"`
	// Requested is the verdict on the requested sizes ("exact" or
	// "unknown", and why): when unknown, largest[].requested_size is null
	// and the requested_bytes figures are "unknown" in exactness.
	Requested kit.HistoryJSON `json:"requested"`
	Segments  []stateSegJSON  `json:"segments"`
	Largest   []liveJSON      `json:"largest"`
	Stacks    []stackJSON     `json:"stacks"`
	Free      []freeJSON      `json:"free"`
	OOM       *oomJSON        `json:"oom"`
	// Findings are explain --json's findings for the device, at an OOM.
	Findings []verdictview.ExplainFindingJSON `json:"findings,omitempty"`
	// PrivatePools are the private pools' figures over the whole trace
	// and at the dump (left out when none).
	PrivatePools []poolFiguresJSON `json:"private_pools,omitempty"`
	// Host is the file's pinned host memory, as summary --json gives it
	// (left out when the file has none).
	Host *hostview.JSON `json:"host,omitempty"`
}

type stateEntryJSON struct {
	Action string `json:"action"`
	Addr   uint64 `json:"addr"`
	Size   int64  `json:"size"`
	Stream uint64 `json:"stream"`
	TimeUS int64  `json:"time_us"`
}

type stateSegJSON struct {
	Address     uint64           `json:"address"`
	Size        int64            `json:"size"`
	Pool        string           `json:"pool"`
	PoolID      [2]int64         `json:"pool_id"`
	Stream      uint64           `json:"stream"`
	Expandable  bool             `json:"expandable"`
	Allocated   int64            `json:"allocated_bytes"`
	Pending     int64            `json:"pending_free_bytes"`
	Free        int64            `json:"free_bytes"`
	LargestFree int64            `json:"largest_free_bytes"`
	Map         string           `json:"map"`
	Blocks      []stateBlockJSON `json:"blocks"`
}

type stateBlockJSON struct {
	Address       uint64 `json:"address"`
	Size          int64  `json:"size"`
	RequestedSize int64  `json:"requested_size"`
	State         string `json:"state"`
	// AllocIndex is the block's alloc entry, -1 when older than the trace
	// or free.
	AllocIndex int `json:"alloc_index"`
}

type liveJSON struct {
	Address       uint64 `json:"address"`
	Size          int64  `json:"size"`
	RequestedSize *int64 `json:"requested_size"` // null when unknown
	Pool          string `json:"pool"`
	Stream        uint64 `json:"stream"`
	AllocIndex    int    `json:"alloc_index"`
	Stack         int    `json:"stack"`
	// Annotations are the annotate entries' user_metadata, in trace
	// order; left out when none.
	Annotations []string `json:"annotations,omitempty"`
	// Region is the torch.compile region of its alloc entry
	// (compile_context); left out outside one.
	Region string `json:"region,omitempty"`
}

type stackJSON struct {
	Allocations int    `json:"allocations"`
	Bytes       int64  `json:"bytes"`
	Where       string `json:"where"`
	// Lines are the text view's lines; Frames every frame, innermost
	// first, as "filename:line name" (empty when none was recorded).
	Lines  []string `json:"lines"`
	Frames []string `json:"frames"`
}

type freeJSON struct {
	Pool       string   `json:"pool"`
	PoolID     [2]int64 `json:"pool_id"`
	Stream     uint64   `json:"stream"`
	Reserved   int64    `json:"reserved_bytes"`
	FreeBytes  int64    `json:"free_bytes"`
	FreeBlocks int      `json:"free_blocks"`
	Largest    int64    `json:"largest_free_bytes"`
}

type oomJSON struct {
	Size        int64  `json:"size"`
	Pool        string `json:"pool"`
	Stream      uint64 `json:"stream"`
	DeviceFree  int64  `json:"device_free"`
	LargestFree int64  `json:"largest_free_bytes"`
	FreeInPool  int64  `json:"free_in_pool_bytes"`
	// Whatif is the device's entry of `snapview whatif --json`.
	Whatif *verdictview.WhatifDeviceJSON `json:"whatif,omitempty"`
}

// WriteStateJSON writes v as indented JSON: every segment with every
// block, the memory_stats() figures at that moment with their exactness,
// the largest live allocations, every stack holding live bytes (index
// "stack" of the allocations), and the free space per pool and stream.
func WriteStateJSON(w io.Writer, v *StateView) error {
	st := v.State
	out := stateJSON{
		Device: v.Device, At: v.At, Index: v.Index, Entries: v.Entries, SinceStartUS: v.SinceStartUS,
		Seeded: v.Seeded, Stats: st.Stats.Flat(), Exactness: map[string]string{},
		History:   kit.HistoryJSON{Exactness: st.Stats.Known.History.String(), Why: st.Stats.Known.Why},
		Requested: kit.RequestedVerdictJSON(st.Stats.Known),
		Segments:  []stateSegJSON{}, Largest: []liveJSON{}, Stacks: []stackJSON{}, Free: []freeJSON{},
		PrivatePools: newPoolsJSON(v.PrivatePools), Host: v.Host,
	}
	for _, f := range st.Stats.Figures() {
		out.Exactness[f.Key] = f.Exactness.String()
	}
	if e := v.Entry; e != nil {
		out.Entry = &stateEntryJSON{Action: e.Action.String(), Addr: uint64(e.Addr), Size: e.Size, Stream: e.Stream, TimeUS: e.TimeUS}
		if e.Action == snapshot.ActionOOM {
			out.Entry.Addr = 0
		}
	}
	for _, s := range v.Segments {
		sj := stateSegJSON{
			Address: uint64(s.Addr), Size: s.Size, Pool: kit.PoolLabel(s.Large, snapshot.PoolID{}, false), PoolID: s.Pool,
			Stream: s.Stream, Expandable: s.Expandable, Allocated: s.Allocated, Pending: s.Pending, Free: s.Free,
			LargestFree: s.LargestFree, Map: s.Map, Blocks: make([]stateBlockJSON, 0, len(s.Blocks)),
		}
		for _, b := range s.Blocks {
			bj := stateBlockJSON{Address: uint64(b.Addr), Size: b.Size, RequestedSize: b.Requested, State: b.State.String(), AllocIndex: -1}
			if b.State.Active() {
				bj.AllocIndex = v.allocIndex(b.Alloc)
			}
			sj.Blocks = append(sj.Blocks, bj)
		}
		out.Segments = append(out.Segments, sj)
	}
	for _, a := range v.Largest {
		out.Largest = append(out.Largest, liveJSON{
			Address: uint64(a.Addr), Size: a.Size, RequestedSize: kit.RequestedJSON(a.Requested, st.Stats.Known), Pool: kit.PoolLabel(a.Large, a.Pool, false),
			Stream: a.Stream, AllocIndex: a.AllocIndex, Stack: a.Stack, Annotations: a.Annotations,
			Region: a.Region,
		})
	}
	for _, g := range v.Stacks {
		frames := []string{}
		if len(v.snap.Stack(g.ID)) > 0 {
			frames = stacks.LinesOf(v.snap, g.ID, stacks.LineOptions{Full: true, Raw: true})
		}
		out.Stacks = append(out.Stacks, stackJSON{Allocations: g.Count, Bytes: g.Bytes, Where: g.Where, Lines: g.Lines, Frames: frames})
	}
	for _, f := range st.Free {
		out.Free = append(out.Free, freeJSON{
			Pool: kit.PoolLabel(f.Large, snapshot.PoolID{}, false), PoolID: f.Pool, Stream: f.Stream, Reserved: f.Reserved,
			FreeBytes: f.FreeBytes, FreeBlocks: f.Blocks, Largest: f.Largest,
		})
	}
	if o := st.OOM; o != nil {
		out.OOM = &oomJSON{Size: o.Size, Pool: kit.PoolLabel(o.Large, snapshot.PoolID{}, false), Stream: o.Stream,
			DeviceFree: o.DeviceFree, LargestFree: o.LargestFree, FreeInPool: o.FreeInPool}
		if v.Whatif != nil {
			d := verdictview.WhatifDevice(v.Whatif)
			out.OOM.Whatif = &d
		}
	}
	if v.Explain != nil {
		out.Findings = []verdictview.ExplainFindingJSON{}
		for i := range v.Explain.Findings {
			out.Findings = append(out.Findings, verdictview.ExplainFindingOf(v.snap, &v.Explain.Findings[i]))
		}
	}
	return kit.WriteJSON(w, out)
}

// allocIndex returns the alloc entry of Allocation k, -1 when it is
// older than the trace or unknown.
func (v *StateView) allocIndex(k int) int {
	if k < 0 || k >= len(v.allocs) {
		return -1
	}
	return v.allocs[k].AllocIndex
}
