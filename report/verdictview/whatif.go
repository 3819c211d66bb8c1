package verdictview

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
)

// WhatifView is what `snapview whatif` shows: one analysis per device.
type WhatifView struct {
	Devices []*whatif.Result
}

// confWidth is the width the table's PYTORCH_CUDA_ALLOC_CONF cells wrap
// at.
const confWidth = 29

// confLabel is how a row's PYTORCH_CUDA_ALLOC_CONF prints in the table:
// one setting a line, each line but the last ending in its comma so that
// a combined setting reads as one value, a long one broken after its key.
// The setting comes from the file, so it is escaped (kit.Escape).
func confLabel(r *whatif.Row) string {
	c := kit.Escape(strings.TrimSpace(r.Conf))
	if c == "" {
		return `""`
	}
	var lines []string
	for _, part := range strings.Split(c, ",") {
		part = strings.TrimSpace(part)
		if n := len(lines); n > 0 && (strings.Contains(lines[n-1], "[") && !strings.Contains(lines[n-1], "]")) {
			lines[n-1] += "," + part // inside a [list]
			continue
		}
		lines = append(lines, part)
	}
	var out []string
	for i, l := range lines {
		if i < len(lines)-1 {
			l += ","
		}
		if k := strings.IndexByte(l, ':'); len(l) > confWidth && k > 0 {
			out = append(out, l[:k+1], "  "+l[k+1:])
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// WhatifLimitLine says which cap was simulated and where it came from.
func WhatifLimitLine(r *whatif.Result) string {
	var b strings.Builder
	switch r.LimitSource {
	case whatif.LimitFlag:
		fmt.Fprintf(&b, "cap %s (%s B, --limit)", capBytes(r.Limit), units.Int(r.Limit))
	case whatif.LimitOOMMessage:
		how := "its \"" + msgFigure(r.Message.Allowed) + " allowed\""
		if r.Message.Allowed == nil {
			how = "the reserved bytes at the oom entry plus its \"" + msgFigure(r.Message.Free) + " is free\""
		}
		if b2 := r.Inferred; b2 != nil {
			fmt.Fprintf(&b, "cap from the OOM message (--oom-message: %s, printed to two decimals) and the trace: "+
				"%s to %s B; each setting simulated at both ends", how, units.Int(b2.Min), units.Int(b2.Max))
		} else {
			fmt.Fprintf(&b, "cap from the OOM message (--oom-message: %s): %s (%s B)", how, capBytes(r.Limit), units.Int(r.Limit))
		}
	case whatif.LimitInferredOOM, whatif.LimitInferredReleases:
		what := "the OOM: at least the highest reserved, less than the reserved bytes at the failed request plus the segment it needed"
		if r.LimitSource == whatif.LimitInferredReleases {
			what = "the frees of cached segments right before new ones (the allocator making room under a cap): at least the " +
				"highest reserved, less than the reserved bytes before such frees plus the segment needed"
		}
		if b2 := r.Inferred; b2 != nil {
			fmt.Fprintf(&b, "cap inferred from %s; the cap lies in %s to %s (%s to %s B): each setting simulated at both ends "+
				"(the table at the lower; --limit or --oom-message fixes it)", what, capBytes(b2.Min), capBytes(b2.Max),
				units.Int(b2.Min), units.Int(b2.Max))
		} else {
			if r.LimitSource == whatif.LimitInferredOOM {
				what = "the OOM: the reserved bytes there plus the free device memory the oom entry recorded (device_free, " +
					"less than the segment it needed: the device was full)"
			}
			fmt.Fprintf(&b, "cap inferred from %s: %s (%s B)", what, capBytes(r.Limit), units.Int(r.Limit))
		}
	default:
		b.WriteString("no cap (none given with --limit or --oom-message, and none the trace shows: no OOM, no frees of cached " +
			"segments to make room)")
	}
	if m := r.Message; m != nil {
		var figs []string
		if m.Capacity != nil {
			figs = append(figs, "device capacity "+m.Capacity.Text)
		}
		if m.InUse != nil {
			figs = append(figs, "this process "+m.InUse.Text+" in use")
		}
		for _, o := range m.Others {
			figs = append(figs, "another process "+o.Text)
		}
		if len(figs) > 0 {
			fmt.Fprintf(&b, "; from the message: %s", strings.Join(figs, ", "))
		}
	}
	if r.MessageNote != "" {
		b.WriteString("; " + r.MessageNote)
	}
	return b.String()
}

func msgFigure(f *whatif.Figure) string {
	if f == nil {
		return "?"
	}
	return f.Text
}

// whatifPeakTrust is the exactness the peaks of row i carry: the file's
// row takes the file's history trust (replay.DecideTrust); a simulated
// row is a lower bound where the file's are (the part of the run before
// the trace is not simulated), else it prints plain (the self-check says
// how far to trust it).
func whatifPeakTrust(r *whatif.Result, i int) stats.Exactness {
	if i == 0 || r.Trust.History == stats.LowerBound {
		return r.Trust.History
	}
	return stats.Exact
}

// whatifTrustNote says what the marks mean in the table.
func whatifTrustNote(k stats.Known) string {
	if k.History == stats.LowerBound {
		return "; peaks marked '+' are at least that much, and the comparisons below hold only over the part of the run the trace covers."
	}
	return "; the file row's peaks are shown as '?', and the comparisons below are approximate."
}

// WhatifSelfCheckLine says how the file's own settings simulated compare
// with the file.
func WhatifSelfCheckLine(r *whatif.Result) string {
	sc := r.SelfCheck
	if sc.Exact && r.Trust.History != stats.Exact {
		return "Self-check: matches the trace. Simulated under its own settings from the first trace entry, the run makes every " +
			"segment_alloc the trace records in order, puts every allocation in the same segment at the same offset, and " +
			"reaches the trace's peaks and OOMs; the trace is not the whole run, so this is not exact for the run."
	}
	if sc.Exact {
		return "Self-check: exact. Simulated under its own settings, the run makes every segment_alloc of the file " +
			"in order, puts every allocation in the same segment at the same offset, and reaches the file's peaks and OOMs."
	}
	where := "at the end"
	if sc.DivergedAt >= 0 {
		where = fmt.Sprintf("at entry %d", sc.DivergedAt)
	}
	return fmt.Sprintf("Self-check: DIVERGES %s: %s. The predictions below are approximate.", where, sc.Reason)
}

// WriteWhatif writes the candidate table of each device, the best row
// marked '*', and the
func WriteWhatif(w io.Writer, v *WhatifView) error {
	for k, r := range v.Devices {
		if k > 0 {
			fmt.Fprintln(w)
		}
		start := "from the start of the run"
		if r.Seeded {
			start = "from the state the replay reconstructed before the first entry (the trace misses the start; " +
				"the segments reserved before it stay as they were under every setting)"
		}
		reqs := units.Int(r.Requests) + " requests"
		if r.Requests == 1 {
			reqs = "1 request"
		}
		calls := units.Plural(r.EmptyCaches, "empty_cache() call") + " read from the trace"
		if r.CapReleases > 0 {
			calls += fmt.Sprintf(", and %s cached segments right before a new segment, as the allocator "+
				"does under a cap: with no cap given (--limit), simulated as empty_cache() calls",
				units.Int(r.CapReleases)+" releases of")
		}
		fmt.Fprint(w, kit.WrapAt("", fmt.Sprintf("Device %d: %s simulated %s; %s.", r.Device, reqs, start, calls), kit.Width(w)))
		fmt.Fprint(w, kit.WrapAt("", WhatifLimitLine(r), kit.Width(w)))
		fmt.Fprint(w, kit.WrapAt("", WhatifSelfCheckLine(r), kit.Width(w)))
		if r.Trust.History != stats.Exact {
			fmt.Fprint(w, kit.WrapAt("", "The file's "+kit.TrustText(r.Trust)+whatifTrustNote(r.Trust), kit.Width(w)))
		}
		fmt.Fprintln(w)
		var rows [][]string
		for i := range r.Rows {
			row := &r.Rows[i]
			mark := ""
			switch {
			case i == r.Best:
				mark = "*"
			case row.Source == whatif.SourceFile:
				mark = "file"
			}
			oom := "no"
			switch {
			case row.Stopped:
				oom = fmt.Sprintf("ends, %d", row.FirstOOM)
			case !row.Fits():
				oom = fmt.Sprintf("yes, %d", row.FirstOOM)
			}
			e := whatifPeakTrust(r, i)
			cells := []string{mark, confLabel(row), kit.FigureValue(row.PeakReserved, true, e), kit.FigureValue(row.PeakAllocated, true, e),
				units.Bytes(row.GapAtPeak), units.Int(row.DeviceAllocs), units.Int(row.AllocRetries), oom}
			if r.Inferred != nil {
				cells = append(cells, fitsFromCell(row))
			}
			rows = append(rows, cells)
		}
		head := []string{"", "PYTORCH_CUDA_ALLOC_CONF", "Peak\nreserved", "Peak\nallocated", "Unused at\nreserved\npeak",
			"Segments", "Retries", "OOM,\nentry"}
		aligns := []tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft}
		if r.Inferred != nil {
			head = append(head, "Fits if\ncap at\nleast")
			aligns = append(aligns, tw.AlignRight)
		}
		// Too wide: the settings wrap, then the segment and retry counts
		// and the unused bytes go.
		ft := kit.FitWrapped(kit.Width(w), head, aligns, rows, nil, 1, 5, 6, 4, 8)
		if err := ft.Render(w, "--json has them"); err != nil {
			return err
		}
		fmt.Fprint(w, kit.WrapAt("", whatifVerdict(r), kit.Width(w)))
		own := &r.Rows[0]
		fmt.Fprint(w, kit.WrapAt("", fmt.Sprintf("Unused (reserved minus allocated) under the file's settings: %s at the reserved peak, "+
			"%s at the allocated peak.", units.Bytes(own.GapAtPeak), units.Bytes(own.GapAtAllocPeak)), kit.Width(w)))
	}
	fmt.Fprint(w, kit.WrapAt("", "Peaks are reserved_bytes and allocated_bytes .all.peak; Unused at reserved peak is reserved minus allocated "+
		"when reserved first reached its peak, once the request that raised it was served (--json has it at the allocated "+
		"peak too); Fits if cap at least "+
		"(with a cap interval) is the smallest cap from the interval's lower bound up under which the setting fits, to 2 MiB "+
		"('<=' where the search stopped on its budget: it fits there); Segments counts cudaMalloc calls and expandable-segment mappings; Retries counts "+
		"cudaMalloc retried after freeing the cache (num_alloc_retries); OOM gives the trace entry of the first "+
		"request that fails ('ends': the file served that request, so the run would have ended there).", kit.Width(w)))
	return nil
}

// fitsFromCell is the "Fits if cap at least" cell of a row.
func fitsFromCell(row *whatif.Row) string {
	c := row.Cap
	switch {
	case c == nil:
		return ""
	case c.From == 0:
		return "none"
	case !c.FromExact:
		return "<= " + capBytes(c.From)
	}
	return capBytes(c.From)
}

// whatifVerdict is the sentence under a device's table.
func whatifVerdict(r *whatif.Result) string {
	if r.LimitSource != whatif.LimitNone {
		return WhatifCapVerdict(r)
	}
	own := &r.Rows[0]
	var b strings.Builder
	if r.Best >= 0 {
		best := &r.Rows[r.Best]
		fmt.Fprintf(&b, "* Best: PYTORCH_CUDA_ALLOC_CONF=%q reserves %s at its peak, %s less than the file's settings.",
			best.Conf, units.Bytes(best.PeakReserved), units.Bytes(own.PeakReserved-best.PeakReserved))
	} else if r.Trust.History != stats.Exact {
		b.WriteString("No setting tried does better than the file's own over the part of the run the trace covers; " +
			"before it, unknown.")
	} else {
		b.WriteString("No setting tried does better than the file's own.")
	}
	if !r.SelfCheck.Exact {
		b.WriteString(" (Approximate: see the self-check.)")
	} else if r.Best >= 0 && r.Trust.History != stats.Exact {
		b.WriteString(" (Over the part of the run the trace covers.)")
	}
	return b.String()
}

// capText names the caps a verdict holds over.
func capText(v whatif.Verdict) string {
	if v.Lo == v.Hi {
		return "under the cap of " + capBytes(v.Lo) + " (" + units.Int(v.Lo) + " B)"
	}
	return "at any cap from " + capBytes(v.Lo) + " to " + capBytes(v.Hi) + " (" + units.Int(v.Lo) + " to " + units.Int(v.Hi) + " B)"
}

// WhatifCapVerdict is the what-if verdict of a run under a cap, stated
// over the caps the file allows (whatif.Result.Verdict): which settings
// fit at every cap of the interval, which fit from a cap on, which fail.
// whatif, state --at oom and the report's OOM marker all print it.
func WhatifCapVerdict(r *whatif.Result) string {
	v := r.Verdict()
	var b strings.Builder
	where := capText(v)
	switch v.Own.Kind {
	case whatif.FitsAll:
		fmt.Fprintf(&b, "The file's settings fit %s.", where)
	case whatif.FitsFrom:
		at := "at " + capBytes(v.Lo)
		if v.Own.From > v.Hi {
			at = where
		}
		fmt.Fprintf(&b, "The file's settings fail %s; they fit from a cap of %s.", at, fromText(v.Own))
	default:
		fmt.Fprintf(&b, "The file's settings fail %s.", where)
	}
	var all, from, none []string
	// Settings that fit from the same cap are named together, in the
	// table's order.
	fromIdx := map[string]int{}
	var fromConfs [][]string
	for _, f := range v.Settings {
		c := strconv.Quote(f.Conf)
		switch f.Kind {
		case whatif.FitsAll:
			all = append(all, fmt.Sprintf("%s (peak reserved %s)", c, units.Bytes(f.PeakReserved)))
		case whatif.FitsFrom:
			k := fromText(f)
			i, ok := fromIdx[k]
			if !ok {
				i = len(from)
				fromIdx[k] = i
				from = append(from, k)
				fromConfs = append(fromConfs, nil)
			}
			fromConfs[i] = append(fromConfs[i], c)
		default:
			none = append(none, c)
		}
	}
	for i, k := range from {
		from[i] = fmt.Sprintf("%s from %s", strings.Join(fromConfs[i], ", "), k)
	}
	if len(all) > 0 {
		fmt.Fprintf(&b, " Fit %s: %s.", where, strings.Join(all, ", "))
	}
	if len(from) > 0 {
		fmt.Fprintf(&b, " Fit only from a higher cap: %s.", strings.Join(from, "; "))
	}
	if len(all) == 0 && len(from) == 0 && len(none) > 0 {
		fmt.Fprintf(&b, " No setting tried fits %s.", where)
	} else if len(none) > 0 {
		fmt.Fprintf(&b, " Fail at every cap tried: %s.", strings.Join(none, ", "))
	}
	if v.Best >= 0 {
		fmt.Fprintf(&b, " * Best: PYTORCH_CUDA_ALLOC_CONF=%q.", r.Rows[v.Best].Conf)
	}
	if v.Uncapped > 0 {
		fmt.Fprintf(&b, " With no cap, the file's settings reserve at most %s (%s B): the memory the run needed as it was.",
			units.Bytes(v.Uncapped), units.Int(v.Uncapped))
	}
	switch {
	case v.Approximate:
		b.WriteString(" (Approximate: the simulation of the file's own settings diverges from the file.)")
	case v.TraceOnly:
		b.WriteString(" (Over the part of the run the trace covers: the file's " + kit.TrustText(r.Trust) + ".)")
	}
	return b.String()
}

func fromText(f whatif.SettingFit) string {
	if !f.FromExact {
		return fmt.Sprintf("%s or less, more than %s", capBytes(f.From), capBytes(f.FromLow))
	}
	return capBytes(f.From) + " = " + units.Int(f.From) + " B"
}

type whatifJSON struct {
	Devices []WhatifDeviceJSON `json:"devices"`
}

// WhatifDeviceJSON is one device of the what-if --json, also under state
// --at oom.
type WhatifDeviceJSON struct {
	Device     int    `json:"device"`
	LimitBytes *int64 `json:"limit_bytes"`
	// LimitSource is "flag", "oom-message", "inferred-oom",
	// "inferred-releases" or null (no cap).
	LimitSource   *string             `json:"limit_source"`
	LimitInferred *whatifBoundsJSON   `json:"limit_inferred"`
	SelfCheck     whatifSelfCheckJSON `json:"self_check"`
	// History is the trust of the file's history figures
	// (replay.DecideTrust), as summary --json gives it.
	History         kit.HistoryJSON `json:"history"`
	EmptyCacheCalls int             `json:"empty_cache_calls"`
	CapReleases     int             `json:"releases_before_new_segment"`
	CapBelowFile    bool            `json:"cap_below_file"`
	// UncappedPeakReserved is what the file's settings reserve at most
	// with no cap (null when not simulated).
	UncappedPeakReserved *int64                `json:"uncapped_peak_reserved_bytes"`
	Candidates           []whatifCandidateJSON `json:"candidates"`
	// Verdict is the sentence the text prints under the table (under a
	// cap, WhatifCapVerdict: state --at oom and the report say the same).
	Verdict string `json:"verdict"`
}

type whatifBoundsJSON struct {
	Min int64 `json:"min_bytes"`
	Max int64 `json:"max_bytes"`
}

type whatifSelfCheckJSON struct {
	// Exact: the simulation matches the trace and the trace is the whole
	// run (history exact); MatchesTrace: the simulation matches the trace.
	Exact        bool   `json:"exact"`
	MatchesTrace bool   `json:"matches_trace"`
	DivergedAt   *int   `json:"diverged_at_entry"`
	Reason       string `json:"reason"`
}

type whatifCandidateJSON struct {
	Conf          string `json:"conf"`
	Source        string `json:"source"`
	PeakReserved  int64  `json:"peak_reserved_bytes"`
	PeakAllocated int64  `json:"peak_allocated_bytes"`
	PeaksExact    string `json:"peaks_exactness"`
	OOM           bool   `json:"oom"`
	// OOMKind is "none", "oom" (a request fails), or "ends": the file
	// served that request, so the run would have ended there.
	OOMKind  string `json:"oom_kind"`
	OOMEntry *int   `json:"oom_entry"`
	Retries  int64  `json:"alloc_retries"`
	Segments int64  `json:"segments_allocated"`
	// UnusedAtPeak is reserved minus allocated when reserved peaked;
	// UnusedAtAllocPeak when allocated peaked.
	UnusedAtPeak      int64 `json:"unused_at_peak_bytes"`
	UnusedAtAllocPeak int64 `json:"unused_at_allocated_peak_bytes"`
	// FitsAtMinCap and FitsAtMaxCap: no request fails at the cap's lower
	// and upper bound (one cap, or none: both are !oom); FitsFrom is the
	// smallest cap from the lower bound up under which it fits (null:
	// none found; with one cap, the cap when it fits).
	FitsAtMinCap bool   `json:"fits_at_min_cap"`
	FitsAtMaxCap bool   `json:"fits_at_max_cap"`
	FitsFrom     *int64 `json:"fits_from_bytes"`
	// FitsFromExact is false when the search stopped on its budget:
	// fits_from_bytes is then a cap it fits under.
	FitsFromExact bool `json:"fits_from_exact"`
	// Best marks the row the text marks '*'.
	Best bool `json:"best"`
}

// WriteWhatifJSON writes v as indented JSON:
// {"devices":[{"device", "limit_bytes" (null: no cap), "limit_inferred"
// ({"min_bytes","max_bytes"} or null), "self_check" ({"exact" (matches
// the trace and history is exact), "matches_trace", "diverged_at_entry"
// (null when none), "reason"}), "history" ({"exactness", "why"}:
// replay.DecideTrust), "empty_cache_calls", "releases_before_new_segment",
// "cap_below_file", "candidates" ([{"conf", "source" ("file", "conf" or
// "candidate"), "peak_reserved_bytes", "peak_allocated_bytes",
// "peaks_exactness", "oom", "oom_kind" ("none", "oom", or "ends": the file
// served that request, so the run would have ended there), "oom_entry"
// (null when none), "alloc_retries", "segments_allocated",
// "unused_at_peak_bytes" (at the reserved peak),
// "unused_at_allocated_peak_bytes", "fits_at_min_cap", "fits_at_max_cap",
// "fits_from_bytes" (null: none found), "fits_from_exact", "best" (the
// text's '*')}], the file's own first), "uncapped_peak_reserved_bytes"
// (with no cap, the file's settings; null when not simulated),
// "limit_source" ("flag", "oom-message", "inferred-oom",
// "inferred-releases" or null), "verdict" (the text's sentence)}]}.
func WriteWhatifJSON(w io.Writer, v *WhatifView) error {
	out := whatifJSON{Devices: []WhatifDeviceJSON{}}
	for _, r := range v.Devices {
		out.Devices = append(out.Devices, WhatifDevice(r))
	}
	return kit.WriteJSON(w, out)
}

// WhatifDevice is one device of the JSON.
func WhatifDevice(r *whatif.Result) WhatifDeviceJSON {
	d := WhatifDeviceJSON{Device: r.Device, Candidates: []whatifCandidateJSON{}, Verdict: whatifVerdict(r)}
	if r.Limit > 0 {
		l := r.Limit
		d.LimitBytes = &l
	}
	if r.LimitSource != whatif.LimitNone {
		src := r.LimitSource
		d.LimitSource = &src
	}
	if b := r.Inferred; b != nil {
		d.LimitInferred = &whatifBoundsJSON{Min: b.Min, Max: b.Max}
	}
	d.SelfCheck = whatifSelfCheckJSON{Exact: r.SelfCheck.Exact && r.Trust.History == stats.Exact,
		MatchesTrace: r.SelfCheck.Exact, Reason: r.SelfCheck.Reason}
	d.History = kit.HistoryJSON{Exactness: r.Trust.History.String(), Why: r.Trust.Why}
	d.EmptyCacheCalls, d.CapReleases, d.CapBelowFile = r.EmptyCaches, r.CapReleases, r.CapBelowFile
	if u := r.Uncapped; u != nil {
		v := u.PeakReserved
		d.UncappedPeakReserved = &v
	}
	if at := r.SelfCheck.DivergedAt; at >= 0 {
		d.SelfCheck.DivergedAt = &at
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		c := whatifCandidateJSON{
			Conf: row.Conf, Source: row.Source, PeakReserved: row.PeakReserved, PeakAllocated: row.PeakAllocated,
			OOM: !row.Fits(), OOMKind: "none", Retries: row.AllocRetries, Segments: row.DeviceAllocs,
			PeaksExact: whatifPeakTrust(r, i).String(), UnusedAtPeak: row.GapAtPeak, UnusedAtAllocPeak: row.GapAtAllocPeak,
			Best: i == r.Best, FitsFromExact: true,
		}
		if cf := row.Cap; cf != nil {
			c.FitsAtMinCap, c.FitsAtMaxCap, c.FitsFromExact = cf.AtMin, cf.AtMax, cf.FromExact
			if cf.From > 0 {
				from := cf.From
				c.FitsFrom = &from
			}
		} else {
			c.FitsAtMinCap, c.FitsAtMaxCap = row.Fits(), row.Fits()
			if row.Fits() && r.Limit > 0 {
				l := r.Limit
				c.FitsFrom = &l
			}
		}
		switch {
		case row.Stopped:
			c.OOMKind = "ends"
		case !row.Fits():
			c.OOMKind = "oom"
		}
		if row.FirstOOM >= 0 {
			e := row.FirstOOM
			c.OOMEntry = &e
		}
		d.Candidates = append(d.Candidates, c)
	}
	return d
}

// WhatifOOMVerdict is the what-if verdict in one sentence, for the HTML
// report's OOM marker: WhatifCapVerdict, as whatif and state --at oom
// print it.
func WhatifOOMVerdict(r *whatif.Result) string {
	return "What-if (snapview whatif): " + WhatifCapVerdict(r)
}

// capBytes formats a cap: in MiB, as caps are set (4656MiB) and searched
// (to 2 MiB), so that two caps a verdict tells apart read apart: 1,600
// MiB and 1,664 MiB, where units.Bytes gives 1.6 GiB for both.
func capBytes(n int64) string {
	const mib = 1 << 20
	if n < mib {
		return units.Bytes(n)
	}
	if n%mib == 0 {
		return units.Int(n/mib) + " MiB"
	}
	whole := units.Int(n / mib)
	return fmt.Sprintf("%s.%d MiB", whole, (n%mib)*10/mib)
}
