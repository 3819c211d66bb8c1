package leakview

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/snapshot"
)

// LeakOptions says how `snapview leaks` prints its groups.
type LeakOptions struct {
	// At is the moment as the user named it ("auto", "end", "oom",
	// "entry:12", ...); "auto" explains the default choice.
	At string
	// Full prints every frame of each stack; by default frames inside
	// torch/, the standard library and C++ are folded into one line per
	// run, and at most StackLines lines are printed per stack.
	Full bool
	// Steps is how the user asked to find steps (--steps); the line that
	// says how the trace was cut depends on it.
	Steps steps.StepSource
}

// stacks.LinesOf is the most lines a folded stack prints in the text view.
const StackLines = 8

// WriteLeaks writes the leak reports of one or more devices as text: per
// device, what was looked at and how the trace was cut into steps, then a
// table of the groups with their live bytes, score, growth, verdict and
// folded stack.
func WriteLeaks(w io.Writer, s *snapshot.Snapshot, reps []*leaks.LeakReport, opt LeakOptions) error {
	ew := &kit.ErrWriter{W: w}
	t := stacks.NewFrameTable(s)
	if len(reps) == 0 {
		ew.Printf("The snapshot holds no segments and no trace entries: nothing is live, so nothing leaks.\n")
	}
	for i, rep := range reps {
		if i > 0 {
			ew.Printf("\n")
		}
		if err := writeLeakDevice(ew, t, rep, opt); err != nil {
			return err
		}
	}
	return ew.Err
}

func writeLeakDevice(ew *kit.ErrWriter, ft *stacks.FrameTable, rep *leaks.LeakReport, opt LeakOptions) error {
	for _, par := range strings.Split(fmt.Sprintf("Device %d: %s.", rep.Device, leakMoment(rep, opt.At)), "\n") {
		ew.Printf("%s", kit.WrapAt("", par, kit.Width(ew.W)))
	}
	key := "allocation stack"
	if rep.Fold {
		key = "the user frames of the allocation stack (--fold)"
	}
	if rep.ByAnnotation {
		key = "annotation (--by-annotation)"
	}
	if rep.ByRegion {
		key = "compiled region (--by region)"
	}
	head := fmt.Sprintf("%s live in %s; %s by %s", units.Bytes(rep.LiveBytes), units.Plural(rep.LiveCount, "allocation"),
		units.Plural(rep.TotalGroups, "group"), key)
	if rep.TotalCount != rep.LiveCount {
		filtered := fmt.Sprintf("(%s of %s after --focus/--ignore/--min-bytes)", units.Plural(rep.TotalCount, "allocation"), units.Bytes(rep.TotalBytes))
		if len(head)+1+len(filtered)+1 > kit.Width(ew.W) {
			head += "\n" + filtered
		} else {
			head += " " + filtered
		}
	}
	for _, par := range strings.Split(head+".", "\n") {
		ew.Printf("%s", kit.WrapAt("", par, kit.Width(ew.W)))
	}
	if k := rep.History; rep.Entries > 0 && k.History != stats.Exact {
		tail := "; growth and allocation times come from the replay and may be off."
		if k.History == stats.LowerBound {
			tail = "; allocations older than the trace carry no growth evidence."
		}
		ew.Printf("%s", kit.WrapAt("", "History: "+kit.TrustText(k)+tail, kit.Width(ew.W)))
	}
	if line := leakStepsLine(ft, rep, opt.Steps); line != "" {
		ew.Printf("%s", kit.WrapAt("", line, kit.Width(ew.W)))
	}
	if leakFree(rep) {
		ew.Printf("%s", kit.WrapAt("", "No leak: every stack returns to its level step after step.", kit.Width(ew.W)))
	}
	if rep.TraceAllocs >= 20 && rep.FreedShare < 0.5 { // a handful of allocations says nothing
		ew.Printf("Only %.0f%% of the allocations in the trace were freed by then: if it covers less than one training step\n"+
			"(an OOM in the first forward pass), growth is that step's activations, not a leak.\n", 100*rep.FreedShare)
	}
	if ew.Err != nil {
		return ew.Err
	}
	if len(rep.Groups) == 0 {
		ew.Printf("\nNo live allocations")
		if rep.TotalCount != rep.LiveCount {
			ew.Printf(" match the filters")
		}
		ew.Printf(".\n")
		return ew.Err
	}
	ew.Printf("\n")
	unit := "step"
	if rep.Steps.Source != steps.StepsAnnotation && rep.Steps.Source != steps.StepsPattern {
		unit = "slice"
	}
	// The columns before the last, then the last wrapped to what is left
	// of kit.Width(ew.W). The number of live allocations opens its second
	// line.
	header := []string{"#", "Live", "Score", "Growth/" + unit}
	sw := kit.SparkWidth // a shorter sparkline under 100 columns
	if kit.Width(ew.W) < 100 {
		sw = kit.SparkWidth / 2
	}
	rows := make([][]string, len(rep.Groups))
	for i, g := range rep.Groups {
		growth := "-"
		if g.Verdict.Kind.Suspicious() && g.Verdict.Window > 0 {
			growth = "+" + units.Bytes(g.WindowBytes/int64(g.Verdict.Window))
		}
		if len(g.Growth) > 0 {
			growth += "\n" + sparklineAt(g.Growth, sw)
		}
		rows[i] = []string{strconv.Itoa(g.Rank), units.Bytes(g.Bytes), units.Bytes(int64(g.Score)), growth}
	}
	lastHeader := "Verdict, allocations, stack (innermost frame first)"
	width := kit.Width(ew.W) - kit.TableWidth(append(rows, header)) - 3
	if width < len(lastHeader) {
		lastHeader = "Verdict, allocations,\nstack (innermost first)"
		width = max(width, 23)
	}
	t := kit.NewTable(ew.W, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft, tw.AlignLeft)
	t.Options(tablewriter.WithRendition(tw.Rendition{Settings: tw.Settings{Separators: tw.Separators{BetweenRows: tw.On}}}))
	t.Header(append(header, lastHeader))
	for i, g := range rep.Groups {
		lines := leakGroupLines(ft, rep, &g, opt, width)
		if err := t.Append(append(rows[i], strings.Join(lines, "\n"))); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if more := rep.TotalGroups - len(rep.Groups); more > 0 {
		ew.Printf("%s more (--top to show them).\n", units.Plural(more, "group"))
	}
	ew.Printf("Score: live bytes weighted by how steadily they came %s after %s (see --help); 0 for groups that\n"+
		"do not grow. Growth: bytes kept per %s, and the group's live bytes at the end of each %s, from '_' (none)\n"+
		"to '@' (its highest).\n", unit, unit, unit, unit)
	return ew.Err
}

// leakGroupLines is the last cell of a group's row, wrapped at width:
// its annotation (--by-annotation), verdict, allocations, compiled
// regions and annotations, and its stack.
func leakGroupLines(ft *stacks.FrameTable, rep *leaks.LeakReport, g *leaks.LeakGroup, opt LeakOptions, width int) []string {
	var lines []string
	if rep.ByAnnotation {
		label := "(none)"
		if g.Label != "" {
			label = kit.Escape(g.Label)
		}
		lines = append(lines, kit.WrapLine("annotation: "+label, width, "  ")...)
	}
	if rep.ByRegion {
		label := "(outside compiled regions)"
		if g.Label != "" {
			label = kit.Escape(g.Label)
		}
		lines = append(lines, kit.WrapLine("region: "+label, width, "  ")...)
	}
	lines = append(lines, kit.WrapLine(g.Verdict.String(), width, "")...)
	lines = append(lines, kit.WrapLine(leakAllocLine(rep, g), width, "")...)
	if len(g.Regions) > 0 && !rep.ByRegion {
		lines = append(lines, kit.WrapLine(LeakRegionLine(g), width, "")...)
	}
	if len(g.Annotations) > 0 && !rep.ByAnnotation {
		lines = append(lines, kit.WrapLine(LeakAnnotationLine(g), width, "  ")...)
	}
	for _, l := range ft.Lines(g.Stack, leakStackOptions(opt.Full)) {
		lines = append(lines, kit.WrapLine("  "+l, width, "      ")...)
	}
	if g.Stacks > 1 && (rep.ByAnnotation || rep.ByRegion) {
		lines = append(lines, kit.WrapLine(fmt.Sprintf("  (%d stacks; the one with the most live bytes is shown)", g.Stacks), width, "   ")...)
	} else if g.Stacks > 1 {
		lines = append(lines, kit.WrapLine(fmt.Sprintf("  (%d stacks share these user frames; the one with the most live bytes is shown)", g.Stacks),
			width, "   ")...)
	}
	return lines
}

// leakMoment describes the moment a report looks at.
func leakMoment(rep *leaks.LeakReport, at string) string {
	if rep.Entries == 0 {
		return "the allocations live in the file (it has no trace for this device)"
	}
	var b strings.Builder
	switch {
	case rep.At == rep.LastOOM:
		fmt.Fprintf(&b, "allocations live at the last OOM, entry %s of %s", units.Int(rep.At), units.Int(rep.Entries))
	case rep.At == rep.Entries-1:
		fmt.Fprintf(&b, "allocations live at the end of the trace (%s)", units.Plural(rep.Entries, "entry"))
	case rep.At < 0:
		fmt.Fprintf(&b, "allocations live before the first entry of the trace (%s)", units.Plural(rep.Entries, "entry"))
	default:
		fmt.Fprintf(&b, "allocations live after entry %s of %s (--at %s)", units.Int(rep.At), units.Int(rep.Entries), at)
	}
	if rep.HasTime && rep.At >= 0 {
		fmt.Fprintf(&b, ", %s after the first entry", units.Seconds(rep.AtUS-rep.FirstUS, 3))
	}
	switch {
	case rep.LastOOM < 0:
	case rep.At == rep.LastOOM && rep.EndAllocated < rep.OOMAllocated:
		fmt.Fprintf(&b, ".\nThe %s freed after it are the OOM's unwinding, not memory given back (--at end looks after them)",
			units.Bytes(rep.OOMAllocated-rep.EndAllocated))
	case rep.At > rep.LastOOM && rep.AtAllocated < rep.OOMAllocated:
		fmt.Fprintf(&b, ".\nAn OOM at entry %s was followed by frees of %s: its unwinding, not a fix (--at oom shows what was live then)",
			units.Int(rep.LastOOM), units.Bytes(rep.OOMAllocated-rep.AtAllocated))
	}
	return b.String()
}

// leakFree reports whether rep found steps and no group that grows over
// them (leak, sawtooth or possible leak): explain's no-leak finding.
func leakFree(rep *leaks.LeakReport) bool {
	if rep.Steps.Source != steps.StepsAnnotation && rep.Steps.Source != steps.StepsPattern || len(rep.Groups) == 0 {
		return false
	}
	for _, g := range rep.Groups {
		switch g.Verdict.Kind {
		case leaks.VerdictLeak, leaks.VerdictSawtooth, leaks.VerdictPossible:
			return false
		}
	}
	return true
}

// leakStepsLine says how the trace was cut.
func leakStepsLine(t *stacks.FrameTable, rep *leaks.LeakReport, asked steps.StepSource) string {
	st := rep.Steps
	prologue := ""
	if st.Prologue {
		prologue = " (step 0: what came before the first)"
		if rep.HasTime && len(rep.Slices) > 1 {
			prologue = " (step 0: what came before the first, which starts at " + units.Seconds(rep.Slices[1].StartUS-rep.FirstUS, 3) + ")"
		}
	}
	switch st.Source {
	case steps.StepsAnnotation:
		return fmt.Sprintf("Growth per training step: %s found from the record_function range %q%s.",
			units.Plural(st.Count, "step"), st.Name, prologue)
	case steps.StepsPattern:
		return fmt.Sprintf("Growth per training step: %s found from the allocation made once per step at %s%s.",
			units.Plural(st.Count, "step"), t.Where(st.Marker), prologue)
	case steps.StepsSlices:
		if asked == steps.StepsSlices {
			return fmt.Sprintf("Growth per slice: the trace is cut into %s of equal entries, as --steps slices asks.",
				units.Plural(st.Count, "slice"))
		}
		return fmt.Sprintf("Growth per slice: no training steps found, so the trace is cut into %s of equal entries.",
			units.Plural(st.Count, "slice"))
	}
	return ""
}

// leakAllocLine says how many allocations a group has and when they were
// made.
func leakAllocLine(rep *leaks.LeakReport, g *leaks.LeakGroup) string {
	var b strings.Builder
	b.WriteString(units.Plural(g.Count, "allocation"))
	switch {
	case g.Count > 1 && g.MinSize == g.MaxSize:
		fmt.Fprintf(&b, " of %s", units.Bytes(g.MinSize))
	case g.Count > 1:
		fmt.Fprintf(&b, " of %s to %s", units.Bytes(g.MinSize), units.Bytes(g.MaxSize))
	}
	if g.BeforeTrace > 0 {
		if g.BeforeTrace == g.Count {
			b.WriteString(", all alive before the trace began")
			return b.String()
		}
		fmt.Fprintf(&b, " (%d alive before the trace began)", g.BeforeTrace)
	}
	if rep.Entries == 0 {
		return b.String()
	}
	when := func(entry int, us int64) string {
		if entry < 0 {
			return "before the trace"
		}
		if rep.HasTime {
			return units.Seconds(us-rep.FirstUS, 3)
		}
		return "entry " + units.Int(entry)
	}
	first, last := when(g.FirstAlloc, g.FirstAllocUS), when(g.LastAlloc, g.LastAllocUS)
	if first == last {
		fmt.Fprintf(&b, ", allocated at %s", first)
	} else {
		fmt.Fprintf(&b, ", allocated from %s to %s", first, last)
	}
	return b.String()
}

// sparkline draws live bytes per slice, at most kit.SparkWidth characters:
// each character is the value at the end of its last slice.
func sparkline(g []leaks.GrowthPoint) string { return sparklineAt(g, kit.SparkWidth) }

// sparklineAt is sparkline in at most maxWidth characters.
func sparklineAt(g []leaks.GrowthPoint, maxWidth int) string {
	n := len(g)
	width := min(n, maxWidth)
	var hi int64
	for _, p := range g {
		hi = max(hi, p.Bytes)
	}
	vals := make([]int64, width)
	for c := range width {
		vals[c] = g[(c+1)*n/width-1].Bytes
	}
	return "[" + kit.RampChars(vals, 0, hi) + "]"
}

// LeakStackLines returns the lines that show a stack in the leak views
// (see stackLines): with full every frame as "filename:line name";
// otherwise folded, at most StackLines lines.
func LeakStackLines(s *snapshot.Snapshot, id snapshot.StackID, full bool) []string {
	return stacks.LinesOf(s, id, leakStackOptions(full))
}

func leakStackOptions(full bool) stacks.LineOptions {
	return stacks.LineOptions{Full: full, Limit: StackLines, More: "--full shows every frame"}
}

// LeakHints returns advice for the person reading the reports: how to
// record what is missing, and what the numbers cannot say. The CLI prints
// them to stderr: each is an analysis.Hint note.
func LeakHints(reps []*leaks.LeakReport) []analysis.Note {
	var hints []string
	noStacks, noTrace, seeded, olderThanTrace := false, false, false, false
	for _, rep := range reps {
		if rep.LiveCount > 0 && rep.NoStackCount == rep.LiveCount && rep.Entries > 0 {
			// Trace entries with frames and a late start: the recording
			// has stacks; the live blocks are older than it.
			if rep.FramesKey && rep.Seeded {
				olderThanTrace = true
			} else {
				noStacks = true
			}
		}
		if rep.Entries == 0 {
			noTrace = true
		}
		if rep.Seeded {
			seeded = true
		}
	}
	if noStacks {
		h := "no allocation stacks were recorded, so every live allocation falls into one '<no stack recorded>' group"
		hints = append(hints, h, `record stacks with torch.cuda.memory._record_memory_history(max_entries=100000, context="all", stacks="python")`)
	}
	if olderThanTrace {
		hints = append(hints, "the live allocations carry no stack: they are older than the trace, whose entries do carry stacks; "+
			"call torch.cuda.memory._record_memory_history before the first CUDA allocation to record theirs")
	}
	if noTrace {
		hints = append(hints, "the file has no allocation history for some devices: their groups show what is live, not how it grew",
			"record history with torch.cuda.memory._record_memory_history(max_entries=100000) before the steps you want to see")
	}
	if seeded {
		hints = append(hints, "the trace starts after the run did (recording started late, or max_entries wrapped): allocations older than the trace carry no growth evidence")
	}
	notes := make([]analysis.Note, len(hints))
	for i, h := range hints {
		notes[i] = analysis.Note{Kind: analysis.Hint, Text: h}
	}
	return notes
}

// LeakAnnotationLine names the annotations (torch.cuda.memory._annotate_tensor)
// of a group's live allocations: "annotated: saved for backward (4.0 KiB in
// 1 allocation)".
func LeakAnnotationLine(g *leaks.LeakGroup) string {
	parts := make([]string, len(g.Annotations))
	for i, a := range g.Annotations {
		parts[i] = fmt.Sprintf("%s (%s in %s)", kit.Escape(a.Label), units.Bytes(a.Bytes), units.Plural(a.Count, "allocation"))
	}
	return "annotated: " + strings.Join(parts, ", ")
}

// LeakRegionLine names the compiled regions a group's live bytes were
// allocated in: "in Torch-Compiled Region: 0/0 (32.0 MiB)".
func LeakRegionLine(g *leaks.LeakGroup) string {
	parts := make([]string, len(g.Regions))
	for i, r := range g.Regions {
		parts[i] = fmt.Sprintf("%s (%s)", kit.Escape(r.Region), units.Bytes(r.Bytes))
	}
	return "in " + strings.Join(parts, ", ")
}
