package monitorview

import (
	"fmt"
	"io"
	"strings"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
)

// WatchView is one frame of `snapview watch`: the logs followed, the
// rules, and what has been read so far.
type WatchView struct {
	// StatsFile and SMIFile name the logs ("" when not followed).
	StatsFile, SMIFile string
	// Every says how often the logs are read ("2s"; "" for --once).
	Every string
	W     *monitor.Watch
	// Warnings are the latest warnings, oldest first.
	Warnings []string
}

// AddLog names a followed log in v: its StatsFile or SMIFile.
func (v *WatchView) AddLog(l *monitor.WatchLog) {
	if l.SMI {
		v.SMIFile = l.Name
	} else {
		v.StatsFile = l.Name
	}
}

// AddWarning adds a warning ("LOG: text") to v, which keeps the latest
// five.
func (v *WatchView) AddWarning(w string) {
	v.Warnings = append(v.Warnings, w)
	if len(v.Warnings) > 5 {
		v.Warnings = v.Warnings[len(v.Warnings)-5:]
	}
}

// watchSpark is the most characters of a watch sparkline.
const watchSpark = 48

// watchSparkline draws the last watchSpark values from lo to hi.
func watchSparkline(vals []int64) string {
	if len(vals) > watchSpark {
		vals = vals[len(vals)-watchSpark:]
	}
	if len(vals) == 0 {
		return "[]"
	}
	lo, hi := vals[0], vals[0]
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	return "[" + kit.RampChars(vals, lo, hi) + "]"
}

// RuleText names a stop rule as --stop-on takes it.
func RuleText(r monitor.StopRule) string {
	switch r.Kind {
	case monitor.StopClimb:
		return "climb"
	case monitor.StopRetries:
		return "retries"
	case monitor.StopOOM:
		return "oom"
	}
	return units.Bytes(r.Limit)
}

// WriteWatchFrame writes the terminal view of v: per device of the
// memory_stats() log the last step, sparklines of allocated and reserved
// bytes per record, the climb verdicts stats gives, retries and OOMs; per
// GPU of the nvidia-smi log its used memory against PyTorch's reserved
// bytes; then the latest warnings.
func WriteWatchFrame(out io.Writer, v *WatchView) error {
	ew := &kit.ErrWriter{W: out}
	var rules []string
	for _, r := range v.W.Rules {
		rules = append(rules, RuleText(r))
	}
	stop := "none (watching only)"
	if len(rules) > 0 {
		stop = strings.Join(rules, ", ")
	}
	when := "read once"
	if v.Every != "" {
		when = "every " + v.Every
	}
	ew.Printf("snapview watch: %s, stop on %s\n", when, stop)
	reserved := map[int]int64{}
	if v.StatsFile != "" {
		ew.Printf("%s: %s%s\n", kit.Escape(v.StatsFile), units.Plural(len(v.W.Stats.Records), "record"), setAside(v.W.StatsSetAside))
		for _, d := range monitor.AnalyzeSteps(&v.W.Stats) {
			last := len(d.Records) - 1
			st := d.Records[last].Stats
			alloc := make([]int64, len(d.Records))
			res := make([]int64, len(d.Records))
			for i, r := range d.Records {
				alloc[i] = r.Stats.AllocatedBytes[stats.PoolAll].Current
				res[i] = r.Stats.ReservedBytes[stats.PoolAll].Current
			}
			reserved[d.Device] = res[last]
			ew.Printf("device %d, %s\n", d.Device, StepLabel(&d, last))
			ew.Printf("  allocated %10s %s peak %s\n", units.Bytes(alloc[last]), watchSparkline(alloc), units.Bytes(st.AllocatedBytes[stats.PoolAll].Peak))
			ew.Printf("  reserved  %10s %s peak %s\n", units.Bytes(res[last]), watchSparkline(res), units.Bytes(st.ReservedBytes[stats.PoolAll].Peak))
			ew.Printf("  %s\n", ClimbVerdict(&d, d.Allocated, "allocated memory"))
			ew.Printf("  %s\n", ClimbVerdict(&d, d.Reserved, "reserved memory"))
			ew.Printf("  cudaMalloc retries %d, OOMs %d\n", st.NumAllocRetries, st.NumOOMs)
		}
	}
	if v.SMIFile != "" {
		ew.Printf("%s: %s%s\n", kit.Escape(v.SMIFile), units.Plural(len(v.W.SMI.Samples), "sample"), setAside(v.W.SMISetAside))
		for _, gpu := range v.W.SMI.GPUs() {
			var used []int64
			var last monitor.SMISample
			for _, s := range v.W.SMI.Samples {
				if s.GPU == gpu {
					used, last = append(used, s.Used), s
				}
			}
			line := fmt.Sprintf("GPU %d used %10s %s", gpu, units.Bytes(last.Used), watchSparkline(used))
			if last.Total > 0 {
				line += " of " + units.Bytes(last.Total)
			}
			ew.Printf("%s\n", line)
			// nvidia-smi indexes GPUs as CUDA does when one GPU is
			// watched: set its used memory against the log's reserved.
			if r, ok := reserved[gpu]; ok && len(reserved) == 1 {
				ew.Printf("  PyTorch reserved %s: %s outside PyTorch's cache (CUDA context, other libraries, other processes)\n",
					units.Bytes(r), units.Bytes(last.Used-r))
			}
		}
	}
	for _, w := range v.Warnings {
		ew.Printf("warning: %s\n", kit.Escape(w))
	}
	return ew.Err
}

// setAside says how many records or samples of a log were set aside when
// it was truncated (a new run): "" when none.
func setAside(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" since the log was truncated (a new run, numbered from 1; %d before it set aside)", n)
}

// WriteWatch writes what watch shows after a read of its logs: on a
// terminal (tty) the screen cleared and the frame (WriteWatchFrame); read
// once (Every ""), the frame; otherwise, when lines arrived (grew), a
// status line (WatchStatusLine).
func WriteWatch(w io.Writer, v *WatchView, tty, grew bool) error {
	switch {
	case tty:
		if _, err := io.WriteString(w, "\x1b[H\x1b[2J"); err != nil {
			return err
		}
		return WriteWatchFrame(w, v)
	case v.Every == "":
		return WriteWatchFrame(w, v)
	case grew:
		if line := WatchStatusLine(v); line != "" {
			_, err := fmt.Fprintln(w, line)
			return err
		}
	}
	return nil
}

// WatchStatusLine is one line about the latest records, for a watch whose
// output is not a terminal.
func WatchStatusLine(v *WatchView) string {
	var parts []string
	for _, d := range monitor.AnalyzeSteps(&v.W.Stats) {
		last := len(d.Records) - 1
		st := d.Records[last].Stats
		parts = append(parts, fmt.Sprintf("device %d %s: allocated %s, reserved %s, retries %d, OOMs %d", d.Device, StepLabel(&d, last),
			units.Bytes(st.AllocatedBytes[stats.PoolAll].Current), units.Bytes(st.ReservedBytes[stats.PoolAll].Current), st.NumAllocRetries, st.NumOOMs))
	}
	gpus := v.W.SMI.GPUs()
	for _, gpu := range gpus {
		var last monitor.SMISample
		for _, s := range v.W.SMI.Samples {
			if s.GPU == gpu {
				last = s
			}
		}
		parts = append(parts, fmt.Sprintf("GPU %d used %s", gpu, units.Bytes(last.Used)))
	}
	return strings.Join(parts, "; ")
}

// StopText says why watch stopped: msg for stdout, under the view
// (TriggerText), and short for the error that sets the exit status
// ("stopped: --stop-on climb held").
func StopText(v *WatchView) (msg, short string) {
	return TriggerText(v), "stopped: --stop-on " + RuleText(v.W.Triggered.Rule) + " held"
}

// TriggerText says why watch stopped: the rule, the device and the step
// (or nvidia-smi sample) at which it first held, and the figures.
func TriggerText(v *WatchView) string {
	t := v.W.Triggered
	if t == nil {
		return ""
	}
	rule := RuleText(t.Rule)
	if t.SMI {
		s := v.W.SMI.Samples[t.Record]
		where := fmt.Sprintf("GPU %d (nvidia-smi, line %d)", t.Device, s.Line)
		if t.Rule.Kind == monitor.StopLimit {
			return fmt.Sprintf("stop (--stop-on %s): %s used %s, above %s", rule, where, units.Bytes(t.Value), rule)
		}
		return fmt.Sprintf("stop (--stop-on climb): %s used memory keeps climbing: +%s, %s", where, units.Bytes(t.Climb.Rise), bytesRange(t.Climb.Base, t.Climb.End))
	}
	var dev *monitor.StepsDevice
	for _, d := range monitor.AnalyzeSteps(&v.W.Stats) {
		if d.Device == t.Device {
			dev = &d
		}
	}
	if dev == nil || t.Record < 0 || t.Record >= len(dev.Records) {
		return fmt.Sprintf("stop (--stop-on %s): device %d", rule, t.Device)
	}
	where := fmt.Sprintf("device %d, %s", t.Device, StepLabel(dev, t.Record))
	switch t.Rule.Kind {
	case monitor.StopClimb:
		return fmt.Sprintf("stop (--stop-on climb): %s: %s memory keeps climbing since %s: +%s (%s)", where, t.What,
			StepLabel(dev, t.Climb.Start), units.Bytes(t.Climb.Rise), bytesRange(t.Climb.Base, t.Climb.End))
	case monitor.StopLimit:
		return fmt.Sprintf("stop (--stop-on %s): %s: reserved %s, above %s", rule, where, units.Bytes(t.Value), rule)
	}
	return fmt.Sprintf("stop (--stop-on %s): %s: %d %s", rule, where, t.Value, t.What)
}
