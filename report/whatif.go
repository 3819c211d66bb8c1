package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/units"
)

// WhatifView is what `snapview whatif` shows: one analysis per device.
type WhatifView struct {
	Devices []*whatif.Result
}

// confWidth is the width the table's PYTORCH_CUDA_ALLOC_CONF cells wrap
// at.
const confWidth = 32

// confLabel is how a row's PYTORCH_CUDA_ALLOC_CONF prints in the table:
// one setting a line, a long one broken after its key.
func confLabel(r *whatif.Row) string {
	c := strings.TrimSpace(r.Conf)
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
	for _, l := range lines {
		if k := strings.IndexByte(l, ':'); len(l) > confWidth && k > 0 {
			out = append(out, l[:k+1], "  "+l[k+1:])
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// whatifLimitLine says which cap was simulated and where it came from.
func whatifLimitLine(r *whatif.Result) string {
	switch {
	case r.LimitGiven:
		return fmt.Sprintf("cap %s (%s B, --limit)", units.Bytes(r.Limit), units.Int(r.Limit))
	case r.Inferred != nil:
		return fmt.Sprintf("cap inferred from the OOM: at least %s (%s B, the highest reserved) and less than %s (%s B, "+
			"reserved at the failed request plus the segment it needed); simulated at the lower bound (--limit sets it)",
			units.Bytes(r.Inferred.Min), units.Int(r.Inferred.Min), units.Bytes(r.Inferred.Max+1), units.Int(r.Inferred.Max+1))
	}
	return "no cap (none given with --limit, and no OOM in the trace to infer one from)"
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

// whatifSelfCheckLine says how the file's own settings simulated compare
// with the file.
func whatifSelfCheckLine(r *whatif.Result) string {
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
// marked '*', and the verdict.
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
		fmt.Fprint(w, wrapAt("", fmt.Sprintf("Device %d: %s simulated %s; %s.", r.Device, reqs, start, calls), textWidth(w)))
		fmt.Fprint(w, wrapAt("", whatifLimitLine(r), textWidth(w)))
		fmt.Fprint(w, wrapAt("", whatifSelfCheckLine(r), textWidth(w)))
		if r.Trust.History != stats.Exact {
			fmt.Fprint(w, wrapAt("", "The file's "+TrustText(r.Trust)+whatifTrustNote(r.Trust), textWidth(w)))
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
			rows = append(rows, []string{mark, confLabel(row), figureValue(row.PeakReserved, true, e), figureValue(row.PeakAllocated, true, e),
				units.Bytes(row.GapAtPeak), units.Int(row.DeviceAllocs), units.Int(row.AllocRetries), oom})
		}
		// Too wide: the settings wrap, then the segment and retry counts
		// and the unused bytes go.
		ft := fitWrapped(textWidth(w), []string{"", "PYTORCH_CUDA_ALLOC_CONF", "Peak\nreserved", "Peak\nallocated", "Unused\nat peak", "Segments", "Retries", "OOM,\nentry"},
			[]tw.Align{tw.AlignLeft, tw.AlignLeft, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft},
			rows, nil, 1, 5, 6, 4)
		if err := ft.render(w, "--json has them"); err != nil {
			return err
		}
		fmt.Fprint(w, wrapAt("", whatifVerdict(r), textWidth(w)))
	}
	fmt.Fprint(w, wrapAt("", "Peaks are reserved_bytes and allocated_bytes .all.peak; Unused at peak is reserved minus allocated "+
		"when reserved peaked; Segments counts cudaMalloc calls and expandable-segment mappings; Retries counts "+
		"cudaMalloc retried after freeing the cache (num_alloc_retries); OOM gives the trace entry of the first "+
		"request that fails ('ends': the file served that request, so the run would have ended there).", textWidth(w)))
	return nil
}

// whatifVerdict is the sentence under a device's table.
func whatifVerdict(r *whatif.Result) string {
	own := &r.Rows[0]
	var b strings.Builder
	if r.Best >= 0 {
		best := &r.Rows[r.Best]
		if own.Fits() {
			fmt.Fprintf(&b, "* Best: PYTORCH_CUDA_ALLOC_CONF=%q reserves %s at its peak, %s less than the file's settings.",
				best.Conf, units.Bytes(best.PeakReserved), units.Bytes(own.PeakReserved-best.PeakReserved))
		} else {
			fmt.Fprintf(&b, "* Best: PYTORCH_CUDA_ALLOC_CONF=%q fits under the cap (peak reserved %s) where the file's settings fail at entry %d.",
				best.Conf, units.Bytes(best.PeakReserved), own.FirstOOM)
		}
		var fits []string
		for i := 1; i < len(r.Rows); i++ {
			if i != r.Best && r.Rows[i].Fits() && !own.Fits() {
				fits = append(fits, r.Rows[i].Conf)
			}
		}
		if len(fits) > 0 {
			fmt.Fprintf(&b, " Also fitting: %s.", strings.Join(fits, "; "))
		}
	} else if own.Fits() && r.Trust.History != stats.Exact {
		b.WriteString("No setting tried does better than the file's own over the part of the run the trace covers; " +
			"before it, unknown.")
	} else if own.Fits() {
		b.WriteString("No setting tried does better than the file's own.")
	} else {
		b.WriteString("No setting tried fits under the cap.")
	}
	if u := r.Uncapped; u != nil {
		fmt.Fprintf(&b, " With no cap, the file's settings reserve at most %s (%s B): the memory the run needed as it was.",
			units.Bytes(u.PeakReserved), units.Int(u.PeakReserved))
	}
	switch {
	case !r.SelfCheck.Exact:
		b.WriteString(" (Approximate: see the self-check.)")
	case r.Best >= 0 && r.Trust.History != stats.Exact:
		b.WriteString(" (Over the part of the run the trace covers.)")
	}
	return b.String()
}

type whatifJSON struct {
	Devices []whatifDeviceJSON `json:"devices"`
}

type whatifDeviceJSON struct {
	Device        int                 `json:"device"`
	LimitBytes    *int64              `json:"limit_bytes"`
	LimitInferred *whatifBoundsJSON   `json:"limit_inferred"`
	SelfCheck     whatifSelfCheckJSON `json:"self_check"`
	// History is the trust of the file's history figures
	// (replay.DecideTrust), as summary --json gives it.
	History         historyJSON `json:"history"`
	EmptyCacheCalls int         `json:"empty_cache_calls"`
	CapReleases     int         `json:"releases_before_new_segment"`
	CapBelowFile    bool        `json:"cap_below_file"`
	// UncappedPeakReserved is what the file's settings reserve at most
	// with no cap (null when not simulated).
	UncappedPeakReserved *int64                `json:"uncapped_peak_reserved_bytes"`
	Candidates           []whatifCandidateJSON `json:"candidates"`
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
	// UnusedAtPeak is reserved minus allocated when reserved peaked.
	UnusedAtPeak int64 `json:"unused_at_peak_bytes"`
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
// "unused_at_peak_bytes", "best" (the text's '*')}], the file's own
// first), "uncapped_peak_reserved_bytes" (with no cap, the file's
// settings; null when not simulated)}]}.
func WriteWhatifJSON(w io.Writer, v *WhatifView) error {
	out := whatifJSON{Devices: []whatifDeviceJSON{}}
	for _, r := range v.Devices {
		out.Devices = append(out.Devices, whatifDevice(r))
	}
	return writeJSON(w, out)
}

// whatifDevice is one device of the JSON.
func whatifDevice(r *whatif.Result) whatifDeviceJSON {
	d := whatifDeviceJSON{Device: r.Device, Candidates: []whatifCandidateJSON{}}
	if r.Limit > 0 {
		l := r.Limit
		d.LimitBytes = &l
	}
	if b := r.Inferred; b != nil {
		d.LimitInferred = &whatifBoundsJSON{Min: b.Min, Max: b.Max}
	}
	d.SelfCheck = whatifSelfCheckJSON{Exact: r.SelfCheck.Exact && r.Trust.History == stats.Exact,
		MatchesTrace: r.SelfCheck.Exact, Reason: r.SelfCheck.Reason}
	d.History = historyJSON{Exactness: r.Trust.History.String(), Why: r.Trust.Why}
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
			PeaksExact: whatifPeakTrust(r, i).String(), UnusedAtPeak: row.GapAtPeak, Best: i == r.Best,
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
// report's OOM marker: the candidate settings that would have run the
// whole trace without an OOM, with their predicted peak reserved.
func WhatifOOMVerdict(r *whatif.Result) string {
	var fits []string
	for i := 1; i < len(r.Rows); i++ {
		if row := &r.Rows[i]; row.Fits() {
			fits = append(fits, fmt.Sprintf("%s (peak reserved %s)", row.Conf, units.Bytes(row.PeakReserved)))
		}
	}
	v := "What-if (snapview whatif, the cap inferred from the OOM): "
	if len(fits) == 0 {
		v += "no candidate PYTORCH_CUDA_ALLOC_CONF setting would have avoided it"
	} else {
		v += "PYTORCH_CUDA_ALLOC_CONF=" + strings.Join(fits, ", or ") + " would have fit"
	}
	if u := r.Uncapped; u != nil {
		v += fmt.Sprintf("; with no cap the run reserves at most %s", units.Bytes(u.PeakReserved))
	}
	switch {
	case !r.SelfCheck.Exact:
		v += " (approximate: the simulation of the file's own settings diverges from the file)"
	case r.Trust.History != stats.Exact:
		v += " (over the part of the run the trace covers: the file's " + TrustText(r.Trust) + ")"
	}
	return v + "."
}
