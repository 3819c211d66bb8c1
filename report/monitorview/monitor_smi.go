package monitorview

import (
	"fmt"
	"io"
	"time"

	"github.com/olekukonko/tablewriter/tw"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
)

// SMIView is what `snapview smi` prints of an nvidia-smi log.
type SMIView struct {
	// File is the log's path as the user gave it; Rows its data rows.
	File string
	Rows int
	// Loc is the zone its timestamps were read in.
	Loc  *time.Location
	GPUs []monitor.GPUSummary
	// Gaps set the log against PyTorch's reserved bytes, when known;
	// Notes are more sentences about them (AgreeText).
	Gaps  []GapView
	Notes []string
}

// GapView is the memory outside PyTorch on one GPU.
type GapView struct {
	GPU, Device int
	// Against names what the reserved bytes come from ("the snapshot's
	// trace", "reserved_bytes.all.current of log.jsonl").
	Against string
	Gap     monitor.Gap
	// StepAt names the step in which a jump between two sample times
	// happened (see [StepAt]); nil when there are no steps.
	StepAt func(fromUS, toUS int64) string
}

// AddGaps adds to v the gaps monitor.Gaps found (their steps named in
// v.Loc) and, as notes, how the memory_stats() log statsName agrees with
// the snapshot snapName (AgreeText).
func (v *SMIView) AddGaps(gaps []monitor.DeviceGap, agree []monitor.DeviceAgreement, statsName, snapName string) {
	for _, g := range gaps {
		gv := GapView{GPU: g.GPU, Device: g.Device, Against: g.Against, Gap: g.Gap}
		if g.Steps != nil {
			gv.StepAt = StepAt(g.Steps, v.Loc)
		}
		v.Gaps = append(v.Gaps, gv)
	}
	for _, a := range agree {
		v.Notes = append(v.Notes, AgreeText(a.Steps, a.Agreement, statsName, snapName))
	}
}

// clock formats a time of the log in its zone.
func clock(us int64, loc *time.Location) string {
	return time.UnixMicro(us).In(loc).Format("15:04:05.000")
}

// WriteSMIText writes per GPU the range of memory.used (min, median,
// max), its growth from the first to the last sample and whether it keeps
// climbing, then the gaps.
func WriteSMIText(w io.Writer, v *SMIView) error {
	ew := &kit.ErrWriter{W: w}
	first, last := v.GPUs[0].FirstUS, v.GPUs[0].LastUS
	var interval int64
	for _, g := range v.GPUs {
		first, last = min(first, g.FirstUS), max(last, g.LastUS)
		interval = max(interval, g.IntervalUS)
	}
	zone := v.Loc.String()
	ew.Printf("%s", kit.WrapTo(w, "", fmt.Sprintf("%s: nvidia-smi log, %s, %d rows, %s to %s (%s, %s), a sample every %s.",
		v.File, units.Plural(len(v.GPUs), "GPU"), v.Rows,
		time.UnixMicro(first).In(v.Loc).Format("2006/01/02 15:04:05.000"), clock(last, v.Loc), zone,
		units.Seconds(last-first, 1), time.Duration(interval*1000).Round(time.Millisecond))))
	var rows [][]string
	for _, g := range v.GPUs {
		total := "-"
		if g.Total > 0 {
			total = units.Bytes(g.Total)
		}
		rows = append(rows, []string{fmt.Sprint(g.GPU), units.Int(g.Samples), total,
			units.Bytes(g.Min), units.Bytes(g.Median), units.Bytes(g.Max), clock(g.MaxAtUS, v.Loc),
			bytesRange(g.First, g.Last), units.SignedBytes(g.Last - g.First), usedOverTime(&g)})
	}
	// Too wide: the first and last, median, least used, sample count and
	// time of the most go.
	ft := kit.FitColumns(kit.Width(w), []string{"GPU", "Samples", "Total", "Min used", "Median used", "Max used", "Max at", "First → last", "Growth", "Used over time"},
		[]tw.Align{tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignRight, tw.AlignLeft},
		rows, nil, 7, 4, 1, 3, 6, 2)
	if ew.Err == nil {
		ew.Err = ft.Render(w, "--json has them")
	}
	ew.Printf("Used over time: the log in %d slices of time, each the most used in it, from '%c' (the GPU's least) to '%c' (its most).\n",
		kit.SparkWidth, kit.SparkRamp[0], kit.SparkRamp[len(kit.SparkRamp)-1])
	for _, g := range v.GPUs {
		ew.Printf("%s", kit.WrapTo(w, "", SMIClimbVerdict(&g, v.Loc)))
	}
	for _, gv := range v.Gaps {
		for _, l := range GapLines(&gv, v.Loc) {
			ew.Printf("%s", kit.WrapTo(w, "", l))
		}
	}
	for _, n := range v.Notes {
		ew.Printf("%s", kit.WrapTo(w, "", n))
	}
	explain := false
	for i := range v.Gaps {
		explain = explain || !WrongGPULikely(&v.Gaps[i].Gap)
	}
	if explain {
		ew.Printf("\n%s", kit.WrapTo(w, "", GapExplanation))
	}
	return ew.Err
}

// usedOverTime draws a GPU's memory.used in kit.SparkWidth slices of the log's
// time, each the most used in the slice (the last slice's value carried
// over an empty one), from its least to its most.
func usedOverTime(g *monitor.GPUSummary) string {
	vals := make([]int64, kit.SparkWidth)
	seen := make([]bool, kit.SparkWidth)
	span := g.LastUS - g.FirstUS + 1
	for _, s := range g.Series {
		c := int((s.TimeUS - g.FirstUS) * kit.SparkWidth / span)
		c = min(max(c, 0), kit.SparkWidth-1)
		if !seen[c] || s.Used > vals[c] {
			vals[c], seen[c] = s.Used, true
		}
	}
	for c := range vals {
		if !seen[c] && c > 0 {
			vals[c] = vals[c-1]
		}
	}
	return "[" + kit.RampChars(vals, g.Min, g.Max) + "]"
}

// bytesRange formats "a → b" so that the two differ when a and b do: in
// units.Bytes's units, or in MiB with one decimal when those round alike.
func bytesRange(a, b int64) string {
	fa, fb := units.Bytes(a), units.Bytes(b)
	if fa == fb && a != b {
		fa, fb = fmt.Sprintf("%.1f MiB", float64(a)/(1<<20)), fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fa + " → " + fb
}

// SMIClimbVerdict says whether a GPU's memory.used keeps climbing.
func SMIClimbVerdict(g *monitor.GPUSummary, loc *time.Location) string {
	c := g.Climb
	if !c.Climbing {
		return fmt.Sprintf("GPU %d: memory.used does not keep climbing: %s at the end, highest %s at %s.",
			g.GPU, units.Bytes(g.Last), units.Bytes(g.Max), clock(g.MaxAtUS, loc))
	}
	start := g.Series[c.Start].TimeUS
	secs := float64(g.LastUS-g.Series[c.Start-1].TimeUS) / 1e6
	s := fmt.Sprintf("GPU %d: memory.used keeps climbing: it started at %s (%s into the log); +%s from then to the end (%s, new highs at %d of %d samples)",
		g.GPU, clock(start, loc), units.Seconds(start-g.FirstUS, 1), units.Bytes(c.Rise), bytesRange(c.Base, c.End), c.Highs, c.Points)
	if secs > 0 {
		s += fmt.Sprintf(", %s per minute", units.SignedBytes(int64(float64(c.Rise)/secs*60)))
	}
	return s + "."
}

// GapLines describe the gap on one GPU: its range, and each lasting jump.
func GapLines(gv *GapView, loc *time.Location) []string {
	g := &gv.Gap
	head := fmt.Sprintf("GPU %d (device %d), outside PyTorch: memory.used minus PyTorch's reserved bytes (%s)", gv.GPU, gv.Device, gv.Against)
	if len(g.Points) == 0 {
		return []string{head + ": no nvidia-smi sample falls within the time the reserved bytes are known; check --tz (the zone nvidia-smi's timestamps were written in)."}
	}
	out := []string{fmt.Sprintf("%s, at %s from %s to %s: least %s at %s, median %s, most %s.", head,
		units.Plural(len(g.Points), "sample"), clock(g.Points[0].TimeUS, loc), clock(g.Points[len(g.Points)-1].TimeUS, loc),
		units.Bytes(g.Min), clock(g.MinAtUS, loc), units.Bytes(g.Median), units.Bytes(g.Max))}
	if w := negativeGapLine(gv); w != "" {
		out = append(out, w)
	}
	for _, j := range g.Jumps {
		when := fmt.Sprintf("between %s and %s", clock(j.AfterUS, loc), clock(j.TimeUS, loc))
		if gv.StepAt != nil {
			if s := gv.StepAt(j.AfterUS, j.TimeUS); s != "" {
				when += ", " + s
			}
		}
		if j.Bytes > 0 {
			out = append(out, fmt.Sprintf("  %s %s: memory taken outside PyTorch's caching allocator (PyTorch's reserved bytes did not change by as much): the CUDA context loading the kernels of a library the first time it runs (lazy loading, in the first steps), another library's cudaMalloc, communication buffers, or another process.", units.SignedBytes(j.Bytes), when))
		} else {
			out = append(out, fmt.Sprintf("  %s %s: memory outside PyTorch's caching allocator given back.", units.SignedBytes(j.Bytes), when))
		}
	}
	return out
}

// WrongGPULikely reports whether the gap says the nvidia-smi GPU is not
// the device's: at most samples (the median) nvidia-smi shows less memory
// used than PyTorch alone had reserved, which cannot be on one GPU.
func WrongGPULikely(g *monitor.Gap) bool { return len(g.Points) > 0 && g.Median < 0 }

// negativeGapLine warns of a negative gap: "" when the gap never is.
func negativeGapLine(gv *GapView) string {
	g := &gv.Gap
	if len(g.Points) == 0 || g.Min >= 0 {
		return ""
	}
	neg := 0
	for _, p := range g.Points {
		if p.Gap < 0 {
			neg++
		}
	}
	if WrongGPULikely(g) {
		return fmt.Sprintf("  Warning: negative at %s: nvidia-smi shows GPU %d using less than PyTorch had reserved on device %d, "+
			"which cannot be on one GPU: GPU %d is probably not the one device %d ran on (the nvidia-smi index differs from the CUDA "+
			"ordinal under CUDA_VISIBLE_DEVICES; --gpu names it), or --tz is wrong. The figures above do not measure memory outside PyTorch.",
			units.OfAll(neg, len(g.Points), "sample"), gv.GPU, gv.Device, gv.GPU, gv.Device)
	}
	return fmt.Sprintf("  Note: negative at %s (least %s): nvidia-smi and the reserved bytes disagree on when memory came or went "+
		"(nvidia-smi samples on its own clock); a negative gap is no memory outside PyTorch.",
		units.OfAll(neg, len(g.Points), "sample"), units.Bytes(g.Min))
}

// GapExplanation says what the memory nvidia-smi counts beyond PyTorch's
// reserved bytes is.
const GapExplanation = "Why nvidia-smi shows more than PyTorch reserved: nvidia-smi counts all memory in use on the GPU, " +
	"PyTorch's reserved bytes only what its caching allocator took with cudaMalloc. The difference is " +
	"(1) the CUDA context of every process on the GPU: the driver's and runtime's state, the loaded kernels of PyTorch and its libraries; " +
	"the least gap, seen once the context exists, bounds it from above; " +
	"(2) memory other code takes with its own cudaMalloc: NCCL's communication buffers (NCCL_BUFFSIZE per channel and peer), " +
	"cuBLAS, cuDNN or cuFFT workspaces and plans not allocated through PyTorch, CuPy, TensorRT, custom extensions; " +
	"(3) other processes on the same GPU (nvidia-smi --query-compute-apps=pid,used_memory --format=csv lists them). " +
	"A lasting jump of the gap with no matching change of reserved is (2) or (3). " +
	"torch.cuda.empty_cache() does not lower it; only the code that took it can give it back."

// The --json schema of `snapview smi`. Bytes are bytes, times
// microseconds since the Unix epoch.
type smiJSON struct {
	File  string       `json:"file"`
	Zone  string       `json:"zone"`
	Rows  int          `json:"rows"`
	GPUs  []smiGPUJSON `json:"gpus"`
	Gaps  []gapJSON    `json:"gaps"`
	Notes []string     `json:"notes"`
}

type smiGPUJSON struct {
	GPU        int      `json:"gpu"`
	Samples    int      `json:"samples"`
	FirstUS    int64    `json:"first_time_us"`
	LastUS     int64    `json:"last_time_us"`
	IntervalUS int64    `json:"interval_us"`
	Total      int64    `json:"total_bytes"`
	Min        int64    `json:"min_used_bytes"`
	Median     int64    `json:"median_used_bytes"`
	Max        int64    `json:"max_used_bytes"`
	MaxAtUS    int64    `json:"max_at_time_us"`
	First      int64    `json:"first_used_bytes"`
	Last       int64    `json:"last_used_bytes"`
	Climb      smiClimb `json:"climb"`
	Verdict    string   `json:"verdict"`
}

type smiClimb struct {
	Climbing bool   `json:"climbing"`
	StartUS  *int64 `json:"start_time_us"`
	Base     int64  `json:"base_bytes"`
	End      int64  `json:"end_bytes"`
	Rise     int64  `json:"rise_bytes"`
	Highs    int    `json:"new_highs"`
	Samples  int    `json:"samples"`
}

type gapJSON struct {
	GPU     int    `json:"gpu"`
	Device  int    `json:"device"`
	Against string `json:"against"`
	Samples int    `json:"samples"`
	Min     int64  `json:"min_bytes"`
	MinAtUS int64  `json:"min_at_time_us"`
	Median  int64  `json:"median_bytes"`
	Max     int64  `json:"max_bytes"`
	// WrongGPU: the median gap is negative, so the nvidia-smi GPU is
	// probably not the device's (see the lines).
	WrongGPU bool          `json:"wrong_gpu_likely"`
	Jumps    []gapJumpJSON `json:"jumps"`
	Lines    []string      `json:"lines"`
}

type gapJumpJSON struct {
	AfterUS int64  `json:"after_time_us"`
	TimeUS  int64  `json:"time_us"`
	Bytes   int64  `json:"bytes"`
	Step    string `json:"step,omitempty"`
}

// WriteSMIAs writes v as JSON (WriteSMIJSON) when json is set, as text
// (WriteSMIText) otherwise.
func WriteSMIAs(w io.Writer, v *SMIView, json bool) error {
	if json {
		return WriteSMIJSON(w, v)
	}
	return WriteSMIText(w, v)
}

// WriteSMIJSON writes v as JSON: per GPU the figures of the text view,
// and the gaps with their jumps.
func WriteSMIJSON(w io.Writer, v *SMIView) error {
	out := smiJSON{File: v.File, Zone: v.Loc.String(), Rows: v.Rows, GPUs: []smiGPUJSON{}, Gaps: []gapJSON{}, Notes: append([]string{}, v.Notes...)}
	for i := range v.GPUs {
		g := &v.GPUs[i]
		c := smiClimb{Climbing: g.Climb.Climbing, Base: g.Climb.Base, End: g.Climb.End, Rise: g.Climb.Rise, Highs: g.Climb.Highs, Samples: g.Climb.Points}
		if g.Climb.Start >= 0 {
			us := g.Series[g.Climb.Start].TimeUS
			c.StartUS = &us
		}
		out.GPUs = append(out.GPUs, smiGPUJSON{GPU: g.GPU, Samples: g.Samples, FirstUS: g.FirstUS, LastUS: g.LastUS, IntervalUS: g.IntervalUS,
			Total: g.Total, Min: g.Min, Median: g.Median, Max: g.Max, MaxAtUS: g.MaxAtUS, First: g.First, Last: g.Last,
			Climb: c, Verdict: SMIClimbVerdict(g, v.Loc)})
	}
	for i := range v.Gaps {
		gv := &v.Gaps[i]
		gj := gapJSON{GPU: gv.GPU, Device: gv.Device, Against: gv.Against, Samples: len(gv.Gap.Points),
			Min: gv.Gap.Min, MinAtUS: gv.Gap.MinAtUS, Median: gv.Gap.Median, Max: gv.Gap.Max,
			WrongGPU: WrongGPULikely(&gv.Gap), Jumps: []gapJumpJSON{}, Lines: GapLines(gv, v.Loc)}
		for _, j := range gv.Gap.Jumps {
			jj := gapJumpJSON{AfterUS: j.AfterUS, TimeUS: j.TimeUS, Bytes: j.Bytes}
			if gv.StepAt != nil {
				jj.Step = gv.StepAt(j.AfterUS, j.TimeUS)
			}
			gj.Jumps = append(gj.Jumps, jj)
		}
		out.Gaps = append(out.Gaps, gj)
	}
	return kit.WriteJSON(w, out)
}
