package verdictview

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/snapview/snapview/analyze/forecast"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
)

// forecastStacksPerForm is how many stacks the text names for each form.
const forecastStacksPerForm = 3

// WriteForecast writes a forecast as text: the files, how their requests
// align, how sizes scale, a table per target value, the --max answer, the
// leave-one-out errors and the
func WriteForecast(w io.Writer, r *forecast.Result) error {
	width := kit.Width(w)
	p := r.Param
	fmt.Fprint(w, kit.WrapAt("", fmt.Sprintf("Forecast by %s from %s (device %d). Every figure below is an estimate: "+
		"the request sequence at the target, resized from the files, run through the allocator simulation of snapview whatif.",
		p, units.Plural(len(r.Files), "snapshot"), r.Device), width))
	for _, f := range r.Files {
		fmt.Fprint(w, kit.WrapAt("    ", fmt.Sprintf("%s=%d  %s: %s, peak allocated %s, peak reserved %s",
			p, f.Value, f.Name, units.Plural(f.Requests, "request"), units.Bytes(f.PeakAllocated), units.Bytes(f.PeakReserved)), width))
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, kit.WrapAt("", fmt.Sprintf("Matched: %s of the requests and %s of the bytes align in every file "+
		"(same stack and stream, in order, sizes that scale together).", sharePct(r.MatchedRequests), sharePct(r.MatchedBytes)), width))
	if r.UnmatchedCount > 0 {
		parts := forecastUnmatchedText(r)
		more := ""
		if n := countUnmatched(r); n < r.UnmatchedCount {
			more = "; and " + units.Int(r.UnmatchedCount-n) + " more"
		}
		fmt.Fprint(w, kit.WrapAt("", fmt.Sprintf("Not matched in every file (%s): %s%s. At a target, those of the nearest file "+
			"that match in another file are sized by a fit over the files that make them, the others keep the nearest file's size.",
			units.Plural(r.UnmatchedCount, "request"), strings.Join(parts, "; "), more), width))
		if r.Partial > 0 {
			fmt.Fprint(w, kit.WrapAt("", fmt.Sprintf("In the file at %s=%d, %s (%s) are fitted over some of the files only.",
				r.Param, r.TemplateValue, units.Plural(r.Partial, "request"), units.Bytes(r.PartialBytes)), width))
		}
	}
	fmt.Fprint(w, kit.WrapAt("", forecastScaling(r), width))
	if r.Rounded > 0 {
		fmt.Fprint(w, kit.WrapAt("", fmt.Sprintf("%s fit their form only within the allocator's rounding, not to the byte.",
			units.Plural(r.Rounded, "request")), width))
	}
	conf := kit.Escape(r.Conf)
	if conf == "" {
		conf = `""`
	}
	limit := "no cap"
	if r.Limit > 0 {
		limit = fmt.Sprintf("cap %s (%s B)", units.Bytes(r.Limit), units.Int(r.Limit))
	}
	fmt.Fprint(w, kit.WrapAt("", fmt.Sprintf("Simulated under PYTORCH_CUDA_ALLOC_CONF=%s, %s.", conf, limit), width))
	for _, n := range r.Notes {
		fmt.Fprint(w, kit.WrapAt("", "Note: "+n+".", width))
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w)
		var rows [][]string
		for _, t := range r.Targets {
			rows = append(rows, forecastRow(r, &t))
		}
		ft := kit.FitWrapped(width, []string{p, "Peak\nreserved", "Peak\nallocated", "OOM", "From", "Note"},
			[]tw.Align{tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft, tw.AlignLeft, tw.AlignLeft},
			rows, nil, 5)
		if err := ft.Render(w, "--json has them"); err != nil {
			return err
		}
		for _, t := range r.Targets {
			if t.OOM {
				fmt.Fprint(w, kit.WrapAt("", forecastOOMLine(r, &t), width))
			}
		}
	}
	if m := r.Max; m != nil {
		fmt.Fprintln(w)
		fmt.Fprint(w, kit.WrapAt("", forecastMaxLine(r, m), width))
	}
	if hasBand(r) {
		fmt.Fprint(w, kit.WrapAt("", forecastBandText(r), width))
	}
	if len(r.LeaveOneOut) > 0 {
		fmt.Fprintln(w)
		fmt.Fprint(w, kit.WrapAt("", "Leave-one-out: each file forecast from the others under its own settings, no cap.", width))
		var rows [][]string
		for _, l := range r.LeaveOneOut {
			rows = append(rows, []string{strconv.FormatInt(l.Value, 10),
				units.Bytes(l.PeakReserved), units.Bytes(l.FilePeakReserved), signedPct(l.ReservedErrorPct),
				units.Bytes(l.PeakAllocated), units.Bytes(l.FilePeakAllocated), signedPct(l.AllocatedErrorPct)})
		}
		ft := kit.FitColumns(width, []string{p, "Reserved\nforecast", "Reserved\nfile", "Error", "Allocated\nforecast", "Allocated\nfile", "Error"},
			[]tw.Align{tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight}, rows, nil)
		if err := ft.Render(w, ""); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	fmt.Fprint(w, kit.WrapAt("", forecastVerdict(r), width))
	return nil
}

// forecastUnmatchedText lists the unmatched requests by stack, most bytes
// first: "<no stack recorded> (batch=4: 165 requests, 2.0 GiB / batch=2: ...)".
func forecastUnmatchedText(r *forecast.Result) []string {
	var order []string
	by := map[string][]string{}
	for _, u := range r.Unmatched {
		if _, ok := by[u.Stack]; !ok {
			order = append(order, u.Stack)
		}
		by[u.Stack] = append(by[u.Stack], fmt.Sprintf("%s=%d: %s, %s", r.Param, templateValue(r, u.File),
			units.Plural(u.Requests, "request"), units.Bytes(u.Bytes)))
	}
	var out []string
	for _, st := range order {
		out = append(out, st+" ("+strings.Join(by[st], " / ")+")")
	}
	return out
}

func countUnmatched(r *forecast.Result) int {
	n := 0
	for _, u := range r.Unmatched {
		n += u.Requests
	}
	return n
}

func sharePct(f float64) string { return strconv.FormatFloat(100*f, 'f', 1, 64) + "%" }

func signedPct(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "%" }

// forecastScaling says how the requests' sizes scale, with the stacks of
// the most bytes for each form.
func forecastScaling(r *forecast.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "How sizes scale with %s (the requests of the file at %s=%d):", r.Param, r.Param, r.TemplateValue)
	first := true
	for f := forecast.Constant; f <= forecast.Irregular; f++ {
		n := r.Forms[f]
		if n == 0 {
			continue
		}
		if !first {
			b.WriteString(";")
		}
		first = false
		fmt.Fprintf(&b, " %s %s (%s)", f, units.Plural(n, "request"), units.Bytes(r.FormBytes[f]))
		if f == forecast.Constant {
			continue
		}
		var top []string
		for _, s := range r.Scaling {
			if s.Form == f && len(top) < forecastStacksPerForm {
				top = append(top, fmt.Sprintf("%s %s", s.Stack, units.Bytes(s.Bytes)))
			}
		}
		if len(top) > 0 {
			b.WriteString(", most from " + strings.Join(top, ", "))
		}
	}
	b.WriteString(".")
	if r.Forms[forecast.Irregular] > 0 {
		b.WriteString(" Irregular requests (no form fits every file: a workspace that stops growing, a kernel chosen by size) " +
			"are piecewise linear between the files and follow the two nearest files beyond them.")
	}
	return b.String()
}

func forecastRow(r *forecast.Result, t *forecast.Target) []string {
	oom := "no"
	if t.OOM {
		oom = fmt.Sprintf("yes, entry %d", t.OOMEntry)
	}
	var notes []string
	switch {
	case t.Far:
		notes = append(notes, fmt.Sprintf("extrapolated far beyond the files (%s)", forecastSpan(r)))
	case t.Extrapolated:
		notes = append(notes, "extrapolated")
	}
	switch {
	case t.Below && t.Band != nil:
		notes = append(notes, "below every file")
	case t.Below:
		notes = append(notes, "below every file: a smaller size can take code paths the files do not show")
	}
	if t.Band != nil {
		notes = append(notes, forecastBandNote(t))
	}
	return []string{strconv.FormatInt(t.Value, 10), units.Bytes(t.PeakReserved), units.Bytes(t.PeakAllocated), oom,
		fmt.Sprintf("%s=%d", r.Param, templateValue(r, t.Template)), strings.Join(notes, "; ")}
}

// forecastBandNote gives a target's band: the range of its peaks with the
// reduction buffers at the other end of their rule, and an OOM verdict
// that holds at one end only.
func forecastBandNote(t *forecast.Target) string {
	b := t.Band
	rng := func(lo, hi int64) string {
		if l, h := units.Bytes(lo), units.Bytes(hi); l != h {
			return l + " to " + h
		}
		return units.Bytes(lo)
	}
	end := "at the other end"
	bufs := units.Plural(b.Buffers, "reduction buffer")
	s := fmt.Sprintf("band: reserved %s, allocated %s (%s %s)", rng(t.ReservedRange()), rng(t.AllocatedRange()), bufs, end)
	if b.PeakReserved == t.PeakReserved && b.PeakAllocated == t.PeakAllocated {
		s = fmt.Sprintf("band: the same peaks with %s %s", bufs, end)
	}
	if b.OOM != t.OOM {
		s += "; OOM at one end only"
	}
	return s
}

// hasBand: a target or the --max answer has a band.
func hasBand(r *forecast.Result) bool {
	for _, t := range r.Targets {
		if t.Band != nil {
			return true
		}
	}
	m := r.Max
	return m != nil && ((m.At != nil && m.At.Band != nil) || (m.Next != nil && m.Next.Band != nil))
}

// forecastBandText explains the bands under the table.
func forecastBandText(r *forecast.Result) string {
	below := false
	for _, t := range r.Targets {
		below = below || t.Below
	}
	s := "Band: a reduction split across thread blocks allocates a staging buffer that grows with the size up to a cap " +
		"the device sets, and none for a short reduction. Beyond the files the forecast sizes these buffers in proportion " +
		"to the value below them and as fitted above them (one only the nearest file makes keeps its size); the band is " +
		"the same sequence with them at the other end of that rule (below the files: at their size; above: held at the " +
		"nearest file's, or grown in proportion). The peaks lie between the two."
	if below {
		s += " Below every file other code paths (kernels, workspaces chosen by size) can differ too."
	}
	return s
}

func forecastSpan(r *forecast.Result) string {
	lo, hi := r.Files[0].Value, r.Files[len(r.Files)-1].Value
	return fmt.Sprintf("%s %d to %d", r.Param, lo, hi)
}

func templateValue(r *forecast.Result, name string) int64 {
	for _, f := range r.Files {
		if f.Name == name {
			return f.Value
		}
	}
	return 0
}

func forecastOOMLine(r *forecast.Result, t *forecast.Target) string {
	return fmt.Sprintf("At %s=%d the first request that fails is entry %d of %s, a %s request from %s: peaks are up to it.",
		r.Param, t.Value, t.OOMEntry, t.Template, units.Bytes(t.OOMSize), t.OOMStack)
}

func forecastMaxLine(r *forecast.Result, m *forecast.Max) string {
	p := r.Param
	var b strings.Builder
	switch {
	case m.Found:
		fmt.Fprintf(&b, "Largest %s that fits under %s: %d (estimate): peak reserved %s, peak allocated %s.",
			p, units.Bytes(r.Limit), m.Value, units.Bytes(m.At.PeakReserved), units.Bytes(m.At.PeakAllocated))
	case m.Value == 0 && m.Next != nil:
		fmt.Fprintf(&b, "Nothing fits under %s: at %s=%d the run fails.", units.Bytes(r.Limit), p, m.Next.Value)
	case m.Next == nil:
		fmt.Fprintf(&b, "Every %s tried fits under %s, up to %d; the search stopped after %s.",
			p, units.Bytes(r.Limit), m.Value, units.Plural(m.Simulations, "simulation"))
	default:
		fmt.Fprintf(&b, "The search stopped after %s: %d fits under %s, %d does not; in between, not tried.",
			units.Plural(m.Simulations, "simulation"), m.Value, units.Bytes(r.Limit), m.Next.Value)
	}
	if n := m.Next; n != nil && m.Found {
		fmt.Fprintf(&b, " At %d the run fails", n.Value)
		if n.OOMEntry >= 0 {
			fmt.Fprintf(&b, " at entry %d of %s, a %s request from %s", n.OOMEntry, n.Template, units.Bytes(n.OOMSize), n.OOMStack)
		}
		fmt.Fprintf(&b, ", having reserved %s.", units.Bytes(n.PeakReserved))
	}
	fmt.Fprintf(&b, " Search: %s, starting from %d (the files' peak reserved extrapolated to the cap)",
		units.Plural(m.Simulations, "simulation"), m.Estimate)
	if m.Refine > 0 {
		fmt.Fprintf(&b, ", moved to %d by %s with no cap", m.Start, units.Plural(m.Refine, "simulation"))
	}
	b.WriteString(".")
	if m.At != nil && m.At.Far {
		fmt.Fprintf(&b, " %d is far beyond the files (%s).", m.Value, forecastSpan(r))
	}
	if t := m.At; t != nil && t.Band != nil && t.Band.OOM != t.OOM {
		fmt.Fprintf(&b, " With the %s beyond the files at the other end of their rule (see Band), %d fails: the answer holds at one end only.",
			units.Plural(t.Band.Buffers, "reduction buffer"), t.Value)
	}
	if t := m.Next; t != nil && m.Found && t.Band != nil && t.Band.OOM != t.OOM {
		fmt.Fprintf(&b, " With the %s beyond the files at the other end of their rule (see Band), %d fits: the answer holds at one end only.",
			units.Plural(t.Band.Buffers, "reduction buffer"), t.Value)
	}
	return b.String()
}

// forecastVerdict is the sentence under the tables.
func forecastVerdict(r *forecast.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Estimate: it holds if the code at the target makes the requests the files make (%s of the requests, %s of the bytes matched), sized as the fits say",
		sharePct(r.MatchedRequests), sharePct(r.MatchedBytes))
	if len(r.Files) == 2 {
		b.WriteString("; from two files a form with two parameters is not checked against a third (give a third file for a leave-one-out error)")
	}
	if len(r.LeaveOneOut) > 0 {
		wa, wr := 0.0, 0.0
		for _, l := range r.LeaveOneOut {
			wa, wr = max(wa, abs(l.AllocatedErrorPct)), max(wr, abs(l.ReservedErrorPct))
		}
		fmt.Fprintf(&b, "; leave-one-out: worst error %.2f%% peak allocated, %.2f%% peak reserved", wa, wr)
	}
	far := false
	for _, t := range r.Targets {
		far = far || t.Far
	}
	if far || (r.Max != nil && r.Max.At != nil && r.Max.At.Far) {
		b.WriteString("; a value far beyond the files' range is flagged: code paths that change with the size (kernels, workspaces) are not in the files")
	}
	b.WriteString(".")
	return b.String()
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

type forecastJSON struct {
	Param       string                  `json:"param"`
	Device      int                     `json:"device"`
	Conf        string                  `json:"conf"`
	LimitBytes  *int64                  `json:"limit_bytes"`
	Estimate    bool                    `json:"estimate"`
	Files       []forecastFileJSON      `json:"files"`
	Matched     forecastMatchedJSON     `json:"matched"`
	Unmatched   []forecastUnmatchedJSON `json:"unmatched"`
	Scaling     forecastScalingJSON     `json:"scaling"`
	Targets     []forecastTargetJSON    `json:"targets"`
	Max         *forecastMaxJSON        `json:"max"`
	LeaveOneOut []forecastLOOJSON       `json:"leave_one_out"`
	Simulations int                     `json:"simulations"`
	Notes       []string                `json:"notes"`
}

type forecastFileJSON struct {
	File            string `json:"file"`
	Value           int64  `json:"value"`
	Requests        int    `json:"requests"`
	Bytes           int64  `json:"bytes"`
	MatchedRequests int    `json:"matched_requests"`
	MatchedBytes    int64  `json:"matched_bytes"`
	PeakAllocated   int64  `json:"peak_allocated_bytes"`
	PeakReserved    int64  `json:"peak_reserved_bytes"`
	Conf            string `json:"conf"`
}

type forecastMatchedJSON struct {
	Requests float64 `json:"requests"`
	Bytes    float64 `json:"bytes"`
}

type forecastUnmatchedJSON struct {
	File     string `json:"file"`
	Stack    string `json:"stack"`
	Requests int    `json:"requests"`
	Bytes    int64  `json:"bytes"`
}

type forecastScalingJSON struct {
	AtValue int64                       `json:"at_value"`
	Forms   map[string]forecastFormJSON `json:"forms"`
	Stacks  []forecastScalingStackJSON  `json:"stacks"`
	Rounded int                         `json:"rounded_requests"`
	// Partial: requests of the file at at_value matched in some files
	// only, fitted over those.
	Partial      int   `json:"partly_matched_requests"`
	PartialBytes int64 `json:"partly_matched_bytes"`
}

type forecastFormJSON struct {
	Requests int   `json:"requests"`
	Bytes    int64 `json:"bytes"`
}

type forecastScalingStackJSON struct {
	Form     string `json:"form"`
	Stack    string `json:"stack"`
	Requests int    `json:"requests"`
	Bytes    int64  `json:"bytes"`
}

type forecastTargetJSON struct {
	Value         int64             `json:"value"`
	PeakAllocated int64             `json:"peak_allocated_bytes"`
	PeakReserved  int64             `json:"peak_reserved_bytes"`
	OOM           bool              `json:"oom"`
	OOMEntry      *int              `json:"oom_entry"`
	OOMBytes      *int64            `json:"oom_request_bytes"`
	OOMStack      *string           `json:"oom_stack"`
	From          string            `json:"from_file"`
	Extrapolated  bool              `json:"extrapolated"`
	Far           bool              `json:"far_beyond_files"`
	Below         bool              `json:"below_files"`
	Band          *forecastBandJSON `json:"band"`
}

// forecastBandJSON is a target's other end (forecast.Band).
type forecastBandJSON struct {
	Requests      int   `json:"requests"`
	PeakAllocated int64 `json:"peak_allocated_bytes"`
	PeakReserved  int64 `json:"peak_reserved_bytes"`
	OOM           bool  `json:"oom"`
	OOMEntry      *int  `json:"oom_entry"`
}

type forecastMaxJSON struct {
	Found         bool                `json:"found"`
	Value         int64               `json:"value"`
	PeakReserved  int64               `json:"peak_reserved_bytes"`
	PeakAllocated int64               `json:"peak_allocated_bytes"`
	Next          *forecastTargetJSON `json:"next"`
	Simulations   int                 `json:"simulations"`
	Start         int64               `json:"search_start"`
	Refined       int64               `json:"search_refined_start"`
	Band          *forecastBandJSON   `json:"band"`
}

type forecastLOOJSON struct {
	File                  string  `json:"file"`
	Value                 int64   `json:"value"`
	PeakAllocated         int64   `json:"peak_allocated_bytes"`
	PeakReserved          int64   `json:"peak_reserved_bytes"`
	FilePeakAllocated     int64   `json:"file_peak_allocated_bytes"`
	FilePeakReserved      int64   `json:"file_peak_reserved_bytes"`
	AllocatedErrorPercent float64 `json:"allocated_error_percent"`
	ReservedErrorPercent  float64 `json:"reserved_error_percent"`
}

func forecastTarget(t *forecast.Target) forecastTargetJSON {
	j := forecastTargetJSON{Value: t.Value, PeakAllocated: t.PeakAllocated, PeakReserved: t.PeakReserved, OOM: t.OOM,
		From: t.Template, Extrapolated: t.Extrapolated, Far: t.Far, Below: t.Below}
	if t.OOM {
		e, sz, st := t.OOMEntry, t.OOMSize, t.OOMStack
		j.OOMEntry, j.OOMBytes, j.OOMStack = &e, &sz, &st
	}
	if b := t.Band; b != nil {
		j.Band = &forecastBandJSON{Requests: b.Buffers, PeakAllocated: b.PeakAllocated, PeakReserved: b.PeakReserved, OOM: b.OOM}
		if b.OOM {
			e := b.OOMEntry
			j.Band.OOMEntry = &e
		}
	}
	return j
}

// WriteForecastJSON writes a forecast as indented JSON (the fields are
// listed in `snapview forecast --help`).
func WriteForecastJSON(w io.Writer, r *forecast.Result) error {
	out := forecastJSON{Param: r.Param, Device: r.Device, Conf: r.Conf, Estimate: true,
		Files: []forecastFileJSON{}, Unmatched: []forecastUnmatchedJSON{}, Targets: []forecastTargetJSON{},
		LeaveOneOut: []forecastLOOJSON{}, Simulations: r.Simulations, Notes: []string{},
		Matched: forecastMatchedJSON{Requests: r.MatchedRequests, Bytes: r.MatchedBytes},
		Scaling: forecastScalingJSON{AtValue: r.TemplateValue, Forms: map[string]forecastFormJSON{}, Stacks: []forecastScalingStackJSON{}, Rounded: r.Rounded,
			Partial: r.Partial, PartialBytes: r.PartialBytes},
	}
	out.Notes = append(out.Notes, r.Notes...)
	if r.Limit > 0 {
		l := r.Limit
		out.LimitBytes = &l
	}
	for _, f := range r.Files {
		out.Files = append(out.Files, forecastFileJSON{File: f.Name, Value: f.Value, Requests: f.Requests, Bytes: f.Bytes,
			MatchedRequests: f.Matched, MatchedBytes: f.MatchedBytes, PeakAllocated: f.PeakAllocated, PeakReserved: f.PeakReserved, Conf: f.Conf})
	}
	for _, u := range r.Unmatched {
		out.Unmatched = append(out.Unmatched, forecastUnmatchedJSON{File: u.File, Stack: u.Stack, Requests: u.Requests, Bytes: u.Bytes})
	}
	for f, n := range r.Forms {
		out.Scaling.Forms[f.String()] = forecastFormJSON{Requests: n, Bytes: r.FormBytes[f]}
	}
	for _, s := range r.Scaling {
		out.Scaling.Stacks = append(out.Scaling.Stacks, forecastScalingStackJSON{Form: s.Form.String(), Stack: s.Stack, Requests: s.Requests, Bytes: s.Bytes})
	}
	for i := range r.Targets {
		out.Targets = append(out.Targets, forecastTarget(&r.Targets[i]))
	}
	if m := r.Max; m != nil {
		mj := &forecastMaxJSON{Found: m.Found, Value: m.Value, Simulations: m.Simulations, Start: m.Estimate, Refined: m.Start}
		if m.At != nil {
			mj.PeakReserved, mj.PeakAllocated = m.At.PeakReserved, m.At.PeakAllocated
			mj.Band = forecastTarget(m.At).Band
		}
		if m.Next != nil {
			n := forecastTarget(m.Next)
			mj.Next = &n
		}
		out.Max = mj
	}
	for _, l := range r.LeaveOneOut {
		out.LeaveOneOut = append(out.LeaveOneOut, forecastLOOJSON{File: l.File, Value: l.Value,
			PeakAllocated: l.PeakAllocated, PeakReserved: l.PeakReserved,
			FilePeakAllocated: l.FilePeakAllocated, FilePeakReserved: l.FilePeakReserved,
			AllocatedErrorPercent: l.AllocatedErrorPct, ReservedErrorPercent: l.ReservedErrorPct})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
