package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/snapview/snapview/analyze/whatif"
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
		return fmt.Sprintf("cap %s (%s B, --limit)", FormatBytes(r.Limit), FormatInt(r.Limit))
	case r.Inferred != nil:
		return fmt.Sprintf("cap inferred from the OOM: at least %s (%s B, the highest reserved) and less than %s (%s B, "+
			"reserved at the failed request plus the segment it needed); simulated at the lower bound (--limit sets it)",
			FormatBytes(r.Inferred.Min), FormatInt(r.Inferred.Min), FormatBytes(r.Inferred.Max+1), FormatInt(r.Inferred.Max+1))
	}
	return "no cap (none given with --limit, and no OOM in the trace to infer one from)"
}

// whatifSelfCheckLine says how the file's own settings simulated compare
// with the file.
func whatifSelfCheckLine(r *whatif.Result) string {
	sc := r.SelfCheck
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
		reqs := FormatInt(int64(r.Requests)) + " requests"
		if r.Requests == 1 {
			reqs = "1 request"
		}
		calls := fmt.Sprintf("%d empty_cache() calls", r.EmptyCaches)
		if r.EmptyCaches == 1 {
			calls = "1 empty_cache() call"
		}
		fmt.Fprint(w, wrapAt("", fmt.Sprintf("Device %d: %s simulated %s; %s read from the trace.", r.Device, reqs, start, calls), textWidth(w)))
		fmt.Fprint(w, wrapAt("", whatifLimitLine(r), textWidth(w)))
		fmt.Fprint(w, wrapAt("", whatifSelfCheckLine(r), textWidth(w)))
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
			rows = append(rows, []string{mark, confLabel(row), FormatBytes(row.PeakReserved), FormatBytes(row.PeakAllocated),
				FormatBytes(row.GapAtPeak), FormatInt(row.DeviceAllocs), FormatInt(row.AllocRetries), oom})
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
				best.Conf, FormatBytes(best.PeakReserved), FormatBytes(own.PeakReserved-best.PeakReserved))
		} else {
			fmt.Fprintf(&b, "* Best: PYTORCH_CUDA_ALLOC_CONF=%q fits under the cap (peak reserved %s) where the file's settings fail at entry %d.",
				best.Conf, FormatBytes(best.PeakReserved), own.FirstOOM)
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
	} else if own.Fits() {
		b.WriteString("No setting tried does better than the file's own.")
	} else {
		b.WriteString("No setting tried fits under the cap.")
	}
	if u := r.Uncapped; u != nil {
		fmt.Fprintf(&b, " With no cap, the file's settings reserve at most %s (%s B): the memory the run needed as it was.",
			FormatBytes(u.PeakReserved), FormatInt(u.PeakReserved))
	}
	if !r.SelfCheck.Exact {
		b.WriteString(" (Approximate: see the self-check.)")
	}
	return b.String()
}

type whatifJSON struct {
	Devices []whatifDeviceJSON `json:"devices"`
}

type whatifDeviceJSON struct {
	Device        int                   `json:"device"`
	LimitBytes    *int64                `json:"limit_bytes"`
	LimitInferred *whatifBoundsJSON     `json:"limit_inferred"`
	SelfCheck     whatifSelfCheckJSON   `json:"self_check"`
	Candidates    []whatifCandidateJSON `json:"candidates"`
}

type whatifBoundsJSON struct {
	Min int64 `json:"min_bytes"`
	Max int64 `json:"max_bytes"`
}

type whatifSelfCheckJSON struct {
	Exact      bool   `json:"exact"`
	DivergedAt *int   `json:"diverged_at_entry"`
	Reason     string `json:"reason"`
}

type whatifCandidateJSON struct {
	Conf          string `json:"conf"`
	Source        string `json:"source"`
	PeakReserved  int64  `json:"peak_reserved_bytes"`
	PeakAllocated int64  `json:"peak_allocated_bytes"`
	OOM           bool   `json:"oom"`
	OOMEntry      *int   `json:"oom_entry"`
	Retries       int64  `json:"alloc_retries"`
	Segments      int64  `json:"segments_allocated"`
}

// WriteWhatifJSON writes v as indented JSON:
// {"devices":[{"device", "limit_bytes" (null: no cap), "limit_inferred"
// ({"min_bytes","max_bytes"} or null), "self_check" ({"exact",
// "diverged_at_entry" (null when none), "reason"}), "candidates" ([{"conf",
// "source" ("file", "conf" or "candidate"), "peak_reserved_bytes",
// "peak_allocated_bytes", "oom", "oom_entry" (null when none),
// "alloc_retries", "segments_allocated"}], the file's own first)}]}.
func WriteWhatifJSON(w io.Writer, v *WhatifView) error {
	out := whatifJSON{Devices: []whatifDeviceJSON{}}
	for _, r := range v.Devices {
		out.Devices = append(out.Devices, whatifDevice(r))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
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
	d.SelfCheck = whatifSelfCheckJSON{Exact: r.SelfCheck.Exact, Reason: r.SelfCheck.Reason}
	if at := r.SelfCheck.DivergedAt; at >= 0 {
		d.SelfCheck.DivergedAt = &at
	}
	for i := range r.Rows {
		row := &r.Rows[i]
		c := whatifCandidateJSON{
			Conf: row.Conf, Source: row.Source, PeakReserved: row.PeakReserved, PeakAllocated: row.PeakAllocated,
			OOM: !row.Fits(), Retries: row.AllocRetries, Segments: row.DeviceAllocs,
		}
		if row.FirstOOM >= 0 {
			e := row.FirstOOM
			c.OOMEntry = &e
		}
		d.Candidates = append(d.Candidates, c)
	}
	return d
}

// whatifOOMVerdict is the what-if verdict in one sentence, for the HTML
// report's OOM marker: the candidate settings that would have run the
// whole trace without an OOM, with their predicted peak reserved.
func whatifOOMVerdict(r *whatif.Result) string {
	var fits []string
	for i := 1; i < len(r.Rows); i++ {
		if row := &r.Rows[i]; row.Fits() {
			fits = append(fits, fmt.Sprintf("%s (peak reserved %s)", row.Conf, FormatBytes(row.PeakReserved)))
		}
	}
	v := "What-if (snapview whatif, the cap inferred from the OOM): "
	if len(fits) == 0 {
		v += "no candidate PYTORCH_CUDA_ALLOC_CONF setting would have avoided it"
	} else {
		v += "PYTORCH_CUDA_ALLOC_CONF=" + strings.Join(fits, ", or ") + " would have fit"
	}
	if u := r.Uncapped; u != nil {
		v += fmt.Sprintf("; with no cap the run reserves at most %s", FormatBytes(u.PeakReserved))
	}
	if !r.SelfCheck.Exact {
		v += " (approximate: the simulation of the file's own settings diverges from the file)"
	}
	return v + "."
}
