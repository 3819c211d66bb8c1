package compareview

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/snapshot"
)

// DiffOptions says how [WriteDiff] shows a diff.
type DiffOptions struct {
	// BaseAt and NewAt are the moments as the user spelled them ("peak").
	BaseAt, NewAt string
	// Top is how many stacks are listed (0: all); the rest are summed in
	// one line.
	Top int
	// Full says the stacks were keyed by their whole stacks (printed
	// frame by frame); else by their user frames.
	Full bool
	// Frames is the most lines printed per stack (0: all).
	Frames int
}

// DescribeSide says where a side was taken, in one line: "FILE, device 0
// at the allocated peak: after entry 89 of 470, step 3, 4.402 s after the
// first entry, inside record_function ProfilerStep#3 > backward" (the
// ranges open then, outermost first, where the file has them); at is the
// moment as the user spelled it (kit.MomentWords words it).
func DescribeSide(s *compare.Side, at string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, device %d at %s", kit.Escape(s.File), s.Device, kit.MomentWords(at))
	switch {
	case s.Entries == 0:
		b.WriteString(": the state the file holds (no trace)")
		return b.String()
	case s.At < 0:
		fmt.Fprintf(&b, ": before the first of %s entries", units.Int(s.Entries))
		return b.String()
	}
	fmt.Fprintf(&b, ": after entry %s of %s", units.Int(s.At), units.Int(s.Entries))
	if s.Step >= 0 {
		fmt.Fprintf(&b, ", step %d of %d", s.Step, s.Steps.Count)
	}
	if s.HasTime {
		fmt.Fprintf(&b, ", %s after the first entry", units.Seconds(s.AtUS-s.FirstUS, 3))
	}
	if len(s.Ranges) > 0 {
		names := make([]string, len(s.Ranges))
		for i, r := range s.Ranges {
			names[i] = kit.Escape(r)
		}
		fmt.Fprintf(&b, ", inside record_function %s", strings.Join(names, " > "))
	}
	return b.String()
}

// alignedText says where the two moments fall on the clock lined up on
// the sides' first steps (compare.AlignSteps, --align step); "" when the
// sides were not lined up.
func alignedText(d *compare.Diff) string {
	if !d.Base.Aligned || !d.New.Aligned {
		return ""
	}
	moved := fmt.Sprintf("base moved %s, new %s", units.Span(d.Base.ShiftUS), units.Span(d.New.ShiftUS))
	if d.Base.At < 0 || d.New.At < 0 {
		return "aligned: the first steps lined up (--align step; " + moved + ")"
	}
	return fmt.Sprintf("aligned: with the first steps lined up (--align step; %s), the new moment falls %s the base moment", moved, spanAfter(d.New.AtUS-d.Base.AtUS))
}

// spanAfter is a signed distance in microseconds as "1.5ms after" or, when
// negative, "1.5ms before".
func spanAfter(us int64) string {
	if us < 0 {
		return units.Span(-us) + " before"
	}
	return units.Span(us) + " after"
}

// clockText says where the moments of two files fall on the time_us
// clock they share (ranks' clock: processes of one host, or hosts with
// synchronised clocks), when neither --align step moved them nor is it one
// file at two moments: "clock: on time_us, the new moment falls 53.024ms
// after the base moment; the new trace starts 1.001s after the base
// trace". "" otherwise.
func clockText(d *compare.Diff) string {
	b, n := d.Base, d.New
	if b.Aligned || n.Aligned || !b.HasTime || !n.HasTime || b.At < 0 || n.At < 0 || b.File == n.File {
		return ""
	}
	return fmt.Sprintf("clock: on time_us, the new moment falls %s the base moment; the new trace starts %s the base trace",
		spanAfter(n.AtUS-b.AtUS), spanAfter(n.FirstUS-b.FirstUS))
}

// signed formats a delta with its sign ("+1.0 MiB", "-3", "0").
func signed(v int64, bytes bool) string {
	s := units.Int(v)
	if bytes {
		s = units.Bytes(v)
	}
	if v > 0 {
		return "+" + s
	}
	return s
}

// WriteDiff writes the text view of `snapview diff`: where each side was
// taken, the settings that differ, the memory_stats() figures side by side
// with their deltas and trust marks, the recording differences, notes,
// and the stacks by |delta| with a total row that adds up to the
// allocated delta.
func WriteDiff(w io.Writer, d *compare.Diff, o DiffOptions) error {
	fmt.Fprintf(w, "base: %s\n", DescribeSide(d.Base, o.BaseAt))
	fmt.Fprintf(w, "new:  %s\n", DescribeSide(d.New, o.NewAt))
	if line := alignedText(d); line != "" {
		fmt.Fprintln(w, line)
	}
	if line := clockText(d); line != "" {
		fmt.Fprint(w, kit.WrapAt("", line, kit.Width(w)))
	}

	fmt.Fprintln(w)
	if len(d.Settings) == 0 {
		fmt.Fprintln(w, "Allocator settings: the same.")
	} else {
		fmt.Fprintln(w, "Allocator settings that differ")
		var rows [][]string
		for _, s := range d.Settings {
			rows = append(rows, []string{s.Key, settingText(s.Key, orAbsent(s.Base)), settingText(s.Key, orAbsent(s.New))})
		}
		// Long values (PYTORCH_CUDA_ALLOC_CONF) wrap in their cell.
		half := max((kit.Width(w)-kit.TableWidth([][]string{{"PYTORCH_CUDA_ALLOC_CONF"}})-6)/2, kit.MinWrapWidth)
		for _, r := range rows {
			r[1], r[2] = kit.WrapCell(r[1], half), kit.WrapCell(r[2], half)
		}
		ft := kit.FitColumns(kit.Width(w), []string{"Setting", "Base", "New"}, []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignLeft}, rows, nil)
		if err := ft.Render(w, ""); err != nil {
			return err
		}
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "memory_stats() at each moment")
	var rows [][]string
	for _, f := range d.Figures {
		delta := signed(f.Delta, f.Bytes)
		if f.Exactness != stats.Exact {
			delta = "?"
		}
		rows = append(rows, []string{f.Name, kit.FigureValue(f.Base, f.Bytes, f.BaseExactness), kit.FigureValue(f.New, f.Bytes, f.NewExactness), delta})
	}
	// Too wide: a figure's name (a memory_stats() key) wraps at a '.'
	// rather than a column going.
	others := [][]string{{"Base", "New", "Delta"}}
	for _, r := range rows {
		others = append(others, r[1:])
	}
	if avail := kit.Width(w) - kit.TableWidth(others) - 3; avail > 0 {
		for _, r := range rows {
			if i := strings.LastIndexByte(r[0][:min(avail, len(r[0]))], '.'); len(r[0]) > avail && i > 0 {
				r[0] = r[0][:i] + "\n  " + r[0][i:]
			}
		}
	}
	ft := kit.FitColumns(kit.Width(w), []string{"Figure", "Base", "New", "Delta"},
		[]tw.Align{tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight}, rows, nil)
	if err := ft.Render(w, ""); err != nil {
		return err
	}
	for _, f := range d.Figures {
		if f.Exactness != stats.Exact {
			fmt.Fprintln(w, "'+': at least this much; '?': unknown. A delta with either side not exact is '?'.")
			break
		}
	}

	if len(d.Recording) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Recording differences")
		for _, r := range d.Recording {
			fmt.Fprintf(w, "  %s: %s (base) vs %s (new)\n", r.What, r.Base, r.New)
		}
	}
	if len(d.Notes) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Notes")
		for _, n := range d.Notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}

	fmt.Fprintln(w)
	how := "their user frames (--full: whole stacks)"
	if o.Full {
		how = "their whole stacks"
	}
	fmt.Fprintf(w, "Live allocations by stack, matched by %s; largest change first\n", how)
	return writeStackDiffs(w, d.Stacks, o, diffRequestedKnown(d))
}

// diffRequestedKnown reports whether both sides' requested sizes are
// known: otherwise no row is marked '*' (requested bytes differ).
func diffRequestedKnown(d *compare.Diff) bool {
	return d.Base.Stats.Known.Requested != stats.Unknown && d.New.Stats.Known.Requested != stats.Unknown
}

// writeStackDiffs writes the stack table of a diff, the first o.Top rows
// and one row for the rest, then the totals.
func writeStackDiffs(w io.Writer, stacks []compare.StackDiff, o DiffOptions, reqKnown bool) error {
	shown := stacks
	if o.Top > 0 && len(shown) > o.Top {
		shown = shown[:o.Top]
	}
	var rows [][]string
	for i, s := range shown {
		lines := frameLines(s.Frames, o.Full, o.Frames)
		counts := fmt.Sprintf("%s -> %s", units.Int(s.BaseCount), units.Int(s.NewCount))
		if reqKnown && s.BaseRequested != s.NewRequested && s.BaseCount == s.NewCount {
			counts += "*"
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), string(s.Status), units.Bytes(s.BaseBytes), units.Bytes(s.NewBytes),
			signed(s.DeltaBytes, true), counts, strings.Join(lines, "\n")})
	}
	var rest, all struct {
		n         int
		base, new int64
		bc, nc    int
	}
	for i, s := range stacks {
		all.n++
		all.base += s.BaseBytes
		all.new += s.NewBytes
		all.bc += s.BaseCount
		all.nc += s.NewCount
		if i >= len(shown) {
			rest.n++
			rest.base += s.BaseBytes
			rest.new += s.NewBytes
			rest.bc += s.BaseCount
			rest.nc += s.NewCount
		}
	}
	if rest.n > 0 {
		rows = append(rows, []string{"", "", units.Bytes(rest.base), units.Bytes(rest.new), signed(rest.new-rest.base, true),
			fmt.Sprintf("%s -> %s", units.Int(rest.bc), units.Int(rest.nc)),
			units.Plural(rest.n, "stack") + " more (--top to list them)"})
	}
	footer := []string{"", "total", units.Bytes(all.base), units.Bytes(all.new), signed(all.new-all.base, true),
		fmt.Sprintf("%s -> %s", units.Int(all.bc), units.Int(all.nc)),
		units.Plural(all.n, "stack") + ": the allocated bytes of each side"}
	// Too wide: the stack wraps, then the counts and the status go.
	ft := kit.FitWrapped(kit.Width(w), []string{"#", "Status", "Base", "New", "Delta", "Allocations", "Stack (innermost frame first)"},
		[]tw.Align{tw.AlignRight, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft},
		rows, footer, 6, 5, 1)
	if err := ft.Render(w, "--json has them"); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "Allocations: count on base -> new; '*' where the count is the same but the requested bytes differ.")
	return err
}

// settingText shows a setting's value: roundup_power2_divisions, which
// allocator_settings records as a dict, as PYTORCH_CUDA_ALLOC_CONF writes
// it ("[256:1,512:2,>:8]").
func settingText(key, value string) string {
	if key != "roundup_power2_divisions" {
		return value
	}
	var raw map[string]int64
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return value
	}
	m := make(map[int64]int64, len(raw))
	for k, v := range raw {
		n, err := strconv.ParseInt(k, 10, 64)
		if err != nil {
			return value
		}
		m[n] = v
	}
	return allocator.DivisionsText(m)
}

// orAbsent shows a missing setting.
func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// frameLines shows a stack key's frames, innermost first, as every view
// shows a stack (see stackLines): with full every frame as
// "filename:line name"; otherwise the user's frames, runs of torch or
// standard-library frames folded into one line, C++ frames cut short (a
// key of user frames has none of those). limit bounds the lines (0: all).
func frameLines(frames []snapshot.Frame, full bool, limit int) []string {
	if len(frames) == 0 {
		return []string{stacks.NoStackText}
	}
	// A one-stack snapshot holding the key's frames, for stackLines.
	one := &snapshot.Snapshot{Frames: frames, Stacks: [][]snapshot.FrameID{{}, make([]snapshot.FrameID, len(frames))}}
	for i := range frames {
		one.Stacks[1][i] = snapshot.FrameID(i)
	}
	return stacks.LinesOf(one, 1, stacks.LineOptions{Full: full, Limit: limit, More: "--frames 0 shows all"})
}
