package monitorview

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
)

// StepsView is what `snapview stats` prints of a memory_stats() log.
type StepsView struct {
	// File is the log's path as the user gave it.
	File    string
	Devices []monitor.StepsDevice
	// Rows is the most records a device's table shows (0: all); the
	// records a verdict points at are always among them.
	Rows int
}

// StepLabel names record i of d: "step 12", or "record 3 (line 3)".
func StepLabel(d *monitor.StepsDevice, i int) string {
	r := d.Records[i]
	if r.HasStep && d.XIsStep {
		return fmt.Sprintf("step %d", r.Step)
	}
	return fmt.Sprintf("record %d (line %d)", i+1, r.Line)
}

// StepAt returns a function that names the step in which something
// happened between two times (microseconds since the epoch). Records are
// written at the end of their step: a record between the two times makes
// it "by the end of step 5 (its record at 14:45:31.247)", else the first
// record after them "during step 6"; "" after the last record.
func StepAt(d *monitor.StepsDevice, loc *time.Location) func(from, to int64) string {
	return func(from, to int64) string {
		for _, r := range d.Records {
			if !r.HasTime || !r.HasStep || r.TimeUS <= from {
				continue
			}
			if r.TimeUS <= to {
				return fmt.Sprintf("by the end of step %d (its record at %s)", r.Step, clock(r.TimeUS, loc))
			}
			return fmt.Sprintf("during step %d", r.Step)
		}
		return ""
	}
}

// AgreeText says how a memory_stats() log (named log) agrees with a
// snapshot (named snap): see monitor.Agree.
func AgreeText(d *monitor.StepsDevice, a monitor.Agreement, log, snap string) string {
	switch {
	case a.Checked == 0:
		return fmt.Sprintf("%s has no record within the trace of %s: they cannot be compared.", log, snap)
	case a.Equal == a.Checked:
		return fmt.Sprintf("%s and %s agree: at %d of %d records within the trace, allocated and reserved bytes equal the replay's at the record's time.", log, snap, a.Equal, a.Checked)
	}
	return fmt.Sprintf("%s and %s differ at %d of %d records within the trace (first: %s): another process or device, or a clock that is off.",
		log, snap, a.Checked-a.Equal, a.Checked, StepLabel(d, a.First))
}

// ClimbVerdict is the sentence `snapview stats`, watch and the report print
// about a climb of what ("allocated memory") over the records of d. The
// climb starts at its first new high (c.Start); its rise, per-step rate
// and the first figure of its range are from the record before it (c.Base
// is that record's figure), and the sentence names that record as such.
func ClimbVerdict(d *monitor.StepsDevice, c monitor.Climb, what string) string {
	if !c.Climbing {
		return fmt.Sprintf("%s does not keep climbing: %s at the end, highest %s at %s.",
			upperFirst(what), units.Bytes(c.End), units.Bytes(c.Max), StepLabel(d, max(c.MaxAt, 0)))
	}
	last := len(d.Records) - 1
	// The rise is from the record before the climb (c.Base's), so the
	// first high's own rise counts; that record is named as such.
	s := fmt.Sprintf("%s keeps climbing: it started at %s; +%s from %s, the record before it, to %s (%s, new highs at %d of %d records)",
		upperFirst(what), StepLabel(d, c.Start), units.Bytes(c.Rise), StepLabel(d, c.Start-1), StepLabel(d, last),
		bytesRange(c.Base, c.End), c.Highs, c.Points)
	if d.XIsStep {
		if n := d.Records[last].Step - d.Records[c.Start-1].Step; n > 0 {
			s += fmt.Sprintf(", +%s per step", units.Bytes(c.Rise/n))
		}
	}
	return s + "."
}

// RetryVerdict says when retries and OOMs began.
func RetryVerdict(d *monitor.StepsDevice) string {
	last := d.Records[len(d.Records)-1].Stats
	var parts []string
	if d.FirstRetry >= 0 {
		parts = append(parts, fmt.Sprintf("cudaMalloc retries from %s on (%d by the end): the allocator had to free its cache and try again, the run is close to running out of memory",
			StepLabel(d, d.FirstRetry), last.NumAllocRetries))
	}
	if d.FirstOOM >= 0 {
		parts = append(parts, fmt.Sprintf("CUDA OOMs from %s on (%d by the end)", StepLabel(d, d.FirstOOM), last.NumOOMs))
	}
	if len(parts) == 0 {
		return "No cudaMalloc retry and no OOM in the log."
	}
	// Both parts start with an identifier or an acronym: no capital.
	return strings.Join(parts, "; ") + "."
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// PickRows chooses the records a table shows: all when rows is 0 or
// enough, else rows of them evenly spread with the first and the last,
// plus those the verdicts point at.
func PickRows(d *monitor.StepsDevice, rows int) []int {
	n := len(d.Records)
	if rows <= 0 || n <= rows {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	var out []int
	for k := range rows {
		out = append(out, k*(n-1)/max(rows-1, 1))
	}
	for _, i := range []int{d.Allocated.Start - 1, d.Allocated.Start, d.Reserved.Start - 1, d.Reserved.Start, d.FirstRetry, d.FirstOOM, d.Allocated.MaxAt} {
		if i >= 0 {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// WriteStepsText writes the per-step table of each device and the
// verdicts: whether allocated and reserved memory keep climbing (and from
// which step), and when retries or OOMs began.
func WriteStepsText(w io.Writer, v *StepsView) error {
	ew := &kit.ErrWriter{W: w}
	total := 0
	for _, d := range v.Devices {
		total += len(d.Records)
	}
	ew.Printf("%s: %s of torch.cuda.memory_stats(), %s.\n", v.File, units.Plural(total, "record"), units.Plural(len(v.Devices), "device"))
	for i := range v.Devices {
		d := &v.Devices[i]
		first, last := d.Records[0], d.Records[len(d.Records)-1]
		span := ""
		if first.HasTime && last.HasTime {
			span = " over " + units.Seconds(last.TimeUS-first.TimeUS, 1)
		}
		if len(d.Records) == 1 {
			ew.Printf("\nDevice %d: 1 record, %s\n", d.Device, StepLabel(d, 0))
		} else {
			ew.Printf("\nDevice %d: %s, %s to %s%s\n", d.Device, units.Plural(len(d.Records), "record"), StepLabel(d, 0), StepLabel(d, len(d.Records)-1), span)
		}
		rows := PickRows(d, v.Rows)
		if ew.Err == nil {
			ew.Err = writeStepsTable(w, d, rows)
		}
		if len(rows) < len(d.Records) {
			ew.Printf("%d of %d records shown (--rows 0 shows them all).\n", len(rows), len(d.Records))
		}
		if d.PeaksReset {
			ew.Printf("%s", kit.WrapTo(w, "", "Peaks are per step: they went down between records, so the loop resets them (torch.cuda.reset_peak_memory_stats())."))
		} else {
			ew.Printf("%s", kit.WrapTo(w, "", "Peaks are since the start of the run (or the last torch.cuda.reset_peak_memory_stats() before the log)."))
		}
		ew.Printf("%s", kit.WrapTo(w, "", ClimbVerdict(d, d.Allocated, "allocated memory")))
		ew.Printf("%s", kit.WrapTo(w, "", ClimbVerdict(d, d.Reserved, "reserved memory")))
		ew.Printf("%s", kit.WrapTo(w, "", RetryVerdict(d)))
	}
	return ew.Err
}

// writeStepsTable writes the rows of d.
func writeStepsTable(w io.Writer, d *monitor.StepsDevice, rows []int) error {
	first := d.Records[0]
	var table [][]string
	for k, i := range rows {
		if k > 0 && i > rows[k-1]+1 {
			table = append(table, []string{"…", "", "", "", "", "", "", "", ""})
		}
		r := d.Records[i]
		st := r.Stats
		step := "-"
		if r.HasStep {
			step = strconv.FormatInt(r.Step, 10)
		}
		tm := "-"
		if r.HasTime && first.HasTime {
			tm = fmt.Sprintf("%.3f", float64(r.TimeUS-first.TimeUS)/1e6)
		}
		var notes []string
		if i == d.Allocated.Start {
			notes = append(notes, "allocated starts climbing")
		}
		if i == d.Reserved.Start {
			notes = append(notes, "reserved starts climbing")
		}
		if i == d.FirstRetry {
			notes = append(notes, "first retry")
		}
		if i == d.FirstOOM {
			notes = append(notes, "first OOM")
		}
		a, res := st.AllocatedBytes[stats.PoolAll], st.ReservedBytes[stats.PoolAll]
		table = append(table, []string{step, tm, units.Bytes(a.Current), units.Bytes(a.Peak), units.Bytes(res.Current), units.Bytes(res.Peak),
			units.Int(st.NumAllocRetries), units.Int(st.NumOOMs), strings.Join(notes, ", ")})
	}
	// Too wide: the note wraps, then the peaks, the time and the counts go.
	ft := kit.FitWrapped(kit.Width(w), []string{"Step", "Time (s)", "Allocated", "Peak\nallocated", "Reserved", "Peak\nreserved", "Retries", "OOMs", "Note"},
		[]tw.Align{tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft},
		table, nil, 8, 3, 5, 1, 7, 6)
	return ft.Render(w, "--json has them")
}

// The --json schema of `snapview stats`. Bytes are bytes, times
// microseconds since the Unix epoch.
type stepsJSON struct {
	File    string            `json:"file"`
	Devices []stepsDeviceJSON `json:"devices"`
}

type stepsDeviceJSON struct {
	Device     int           `json:"device"`
	Records    []stepJSON    `json:"records"`
	Allocated  climbJSON     `json:"allocated_climb"`
	Reserved   climbJSON     `json:"reserved_climb"`
	PeaksReset bool          `json:"peaks_reset"`
	FirstRetry *stepRefJSON  `json:"first_retry"`
	FirstOOM   *stepRefJSON  `json:"first_oom"`
	Warnings   []findingJSON `json:"warnings_at_last_record"`
	Verdicts   []string      `json:"verdicts"`
}

type stepJSON struct {
	Line          int    `json:"line"`
	Step          *int64 `json:"step"`
	TimeUS        *int64 `json:"time_us"`
	Allocated     int64  `json:"allocated_bytes"`
	AllocatedPeak int64  `json:"allocated_bytes_peak"`
	Reserved      int64  `json:"reserved_bytes"`
	ReservedPeak  int64  `json:"reserved_bytes_peak"`
	InactiveSplit int64  `json:"inactive_split_bytes"`
	NumAllocRetry int64  `json:"num_alloc_retries"`
	NumOOMs       int64  `json:"num_ooms"`
}

type stepRefJSON struct {
	Record int    `json:"record"`
	Line   int    `json:"line"`
	Step   *int64 `json:"step"`
}

type climbJSON struct {
	Climbing bool         `json:"climbing"`
	Start    *stepRefJSON `json:"start"`
	// Base is the record before Start, the one BaseBytes and RiseBytes
	// are measured from.
	Base      *stepRefJSON `json:"base"`
	BaseBytes int64        `json:"base_bytes"`
	End       int64        `json:"end_bytes"`
	Rise      int64        `json:"rise_bytes"`
	Highs     int          `json:"new_highs"`
	Records   int          `json:"records"`
}

func stepRef(d *monitor.StepsDevice, i int) *stepRefJSON {
	if i < 0 {
		return nil
	}
	r := d.Records[i]
	ref := &stepRefJSON{Record: i, Line: r.Line}
	if r.HasStep {
		s := r.Step
		ref.Step = &s
	}
	return ref
}

func climbToJSON(d *monitor.StepsDevice, c monitor.Climb) climbJSON {
	return climbJSON{Climbing: c.Climbing, Start: stepRef(d, c.Start), Base: stepRef(d, c.Start-1), BaseBytes: c.Base, End: c.End, Rise: c.Rise, Highs: c.Highs, Records: c.Points}
}

// WriteStepsJSON writes v as JSON (every record, whatever Rows says).
func WriteStepsJSON(w io.Writer, v *StepsView) error {
	out := stepsJSON{File: v.File, Devices: []stepsDeviceJSON{}}
	for i := range v.Devices {
		d := &v.Devices[i]
		dj := stepsDeviceJSON{Device: d.Device, Records: []stepJSON{}, PeaksReset: d.PeaksReset,
			Allocated: climbToJSON(d, d.Allocated), Reserved: climbToJSON(d, d.Reserved),
			FirstRetry: stepRef(d, d.FirstRetry), FirstOOM: stepRef(d, d.FirstOOM),
			Warnings: findingsJSON(monitor.Check(d.Records[len(d.Records)-1].Stats)),
			Verdicts: []string{ClimbVerdict(d, d.Allocated, "allocated memory"), ClimbVerdict(d, d.Reserved, "reserved memory"), RetryVerdict(d)}}
		for _, r := range d.Records {
			st := r.Stats
			sj := stepJSON{Line: r.Line,
				Allocated: st.AllocatedBytes[stats.PoolAll].Current, AllocatedPeak: st.AllocatedBytes[stats.PoolAll].Peak,
				Reserved: st.ReservedBytes[stats.PoolAll].Current, ReservedPeak: st.ReservedBytes[stats.PoolAll].Peak,
				InactiveSplit: st.InactiveSplitBytes[stats.PoolAll].Current, NumAllocRetry: st.NumAllocRetries, NumOOMs: st.NumOOMs}
			if r.HasStep {
				s := r.Step
				sj.Step = &s
			}
			if r.HasTime {
				t := r.TimeUS
				sj.TimeUS = &t
			}
			dj.Records = append(dj.Records, sj)
		}
		out.Devices = append(out.Devices, dj)
	}
	return kit.WriteJSON(w, out)
}
