package html

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"time"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/timeline"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/monitorview"
	"github.com/snapview/snapview/snapshot"
)

// MonitorInput is what `snapview report --smi LOG.csv --stats LOG.jsonl`
// sets against the snapshot, each log analysed once: either may be
// absent.
type MonitorInput struct {
	// SMI is monitor.SummarizeSMI of the nvidia-smi log (nil without one);
	// SMIName names the log.
	SMI     []monitor.GPUSummary
	SMIName string
	// Loc is the zone the nvidia-smi timestamps were read in.
	Loc *time.Location
	// Stats is monitor.AnalyzeSteps of the memory_stats() log (nil
	// without one); StatsName names the log.
	Stats     []monitor.StepsDevice
	StatsName string
	// GPU is the nvidia-smi index of the reported device (--gpu), when
	// GPUSet; otherwise each device is set against the GPU
	// monitor.GPUFor picks.
	GPU    int
	GPUSet bool
}

// monitorGaps are what monitor.Gaps, the rule `snapview smi` follows,
// finds for the devices of a page: the gaps to the nvidia-smi log and the
// memory_stats() log's agreement with the replays.
type monitorGaps struct {
	gaps    []monitor.DeviceGap
	agree   []monitor.DeviceAgreement
	several bool // the page has several devices (monitor.GPUFor)
}

// findMonitorGaps runs monitor.Gaps over the devices of a page of f,
// reusing f's replays.
func findMonitorGaps(in *MonitorInput, f *analysis.File, title string, devices []int) (*monitorGaps, error) {
	// Its notes are the page's warnings, worded for the page in
	// buildMonitor.
	gaps, agree, _, err := monitor.Gaps(in.SMI, monitor.GapOptions{SMIName: in.SMIName, Steps: in.Stats, StatsName: in.StatsName,
		Snap: f.Snap, SnapName: title, File: f, Devices: devices, GPU: in.GPU, GPUSet: in.GPUSet})
	if err != nil {
		return nil, err
	}
	return &monitorGaps{gaps: gaps, agree: agree, several: len(devices) > 1}, nil
}

// of returns the gap and the agreement of device dev; nil where there is
// none.
func (g *monitorGaps) of(dev int) (*monitor.DeviceGap, *monitor.DeviceAgreement) {
	var dg *monitor.DeviceGap
	var da *monitor.DeviceAgreement
	for i := range g.gaps {
		if g.gaps[i].Device == dev {
			dg = &g.gaps[i]
		}
	}
	for i := range g.agree {
		if g.agree[i].Steps.Device == dev {
			da = &g.agree[i]
		}
	}
	return dg, da
}

// Monitor is the section of a device that sets the monitoring logs
// against the snapshot. X values are in the timeline's unit (htmlX of
// microseconds since the first trace entry).
type Monitor struct {
	// Sources names the logs ("nvidia-smi log smi.csv (GPU 0, UTC)").
	Sources []string
	// Notes are the verdicts: climbs, the gap and its jumps.
	Notes []string
	// Warnings say what could not be lined up.
	Warnings []string
	// Explanation says what the gap is made of ("" without nvidia-smi).
	Explanation string
	// Used are nvidia-smi's memory.used samples; Overlay those within the
	// trace, drawn on the timeline; Reserved is PyTorch's reserved bytes
	// (the timeline's points); Gap is Used minus Reserved.
	Used, Overlay, Reserved, Gap [][2]float64
	// StepAllocated and StepReserved are the stats log's records with a
	// time; StepNames name them ("step 12").
	StepAllocated, StepReserved [][2]float64
	StepNames                   []string
	// Jumps mark the gap's lasting jumps.
	Jumps []Marker
	// Steps are the rows of the stats log table, formatted.
	Steps [][]string
}

// monitorBuckets is how many time buckets the nvidia-smi samples and the
// gap are drawn in: each keeps its minimum and maximum (a day of samples
// every 100 ms would otherwise put 864,000 points per GPU in the page).
const monitorBuckets = 2000

// buildMonitor makes the monitoring section of one device from in, the
// gaps and agreement mg found for it (monitor.Gaps), the device's trace and
// replay res (nil without one) and its timeline (nil without one). The x
// origin is the first trace entry's time_us (microseconds since the Unix
// epoch) with a time, as the timeline's; without trace times, the first
// sample of the logs.
func buildMonitor(in *MonitorInput, mg *monitorGaps, s *snapshot.Snapshot, dev int, res *replay.Result, tl *timeline.Timeline) (*Monitor, error) {
	m := &Monitor{}
	trace := replay.DeviceTrace(s, dev)
	// Reserved bytes after each entry, against time, as monitor.Gaps
	// sets them against the logs.
	_, reserved := monitor.TraceSeries(trace, res)
	var origin int64
	haveOrigin := reserved.Span() > 0
	if haveOrigin {
		origin = reserved.TimesUS[0]
		if tl != nil && tl.XIsTime {
			for p := range tl.X {
				m.Reserved = append(m.Reserved, [2]float64{htmlX(tl.X[p], true), float64(tl.Reserved[p])})
			}
		} else {
			// Some entries lack a time_us, or time goes back: the
			// timeline is drawn by entry, this chart from the series.
			for _, i := range timeline.DownsampleMinMax(reserved.TimesUS, monitorBuckets, nil, reserved.Values) {
				m.Reserved = append(m.Reserved, [2]float64{htmlX(reserved.TimesUS[i]-origin, true), float64(reserved.Values[i])})
			}
		}
	} else {
		m.Warnings = append(m.Warnings, fmt.Sprintf("The snapshot's trace of this device covers no time (%s, none or one with a time_us): the logs cannot be placed on it, and are drawn from their own first sample.", units.Plural(len(trace), "entry")))
	}
	var steps *monitor.StepsDevice
	if in.Stats != nil {
		for i := range in.Stats {
			if in.Stats[i].Device == dev {
				steps = &in.Stats[i]
			}
		}
		if steps == nil {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s has no record of device %d.", in.StatsName, dev))
		}
	}
	dg, agree := mg.of(dev)
	var gpu *monitor.GPUSummary
	if in.SMI != nil {
		var gpus []int
		for _, g := range in.SMI {
			gpus = append(gpus, g.GPU)
		}
		idx, ok, err := monitor.GPUFor(gpus, dev, in.GPU, in.GPUSet, mg.several)
		if err != nil {
			return nil, err
		}
		if ok {
			for i := range in.SMI {
				if in.SMI[i].GPU == idx {
					gpu = &in.SMI[i]
				}
			}
			m.Sources = append(m.Sources, fmt.Sprintf("nvidia-smi log %s (GPU %d, timestamps read as %s)", in.SMIName, idx, in.Loc))
		} else {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s has no GPU %d: with several devices, each is matched with the nvidia-smi GPU of its index (report one with --device and --gpu to choose).", in.SMIName, dev))
		}
	}
	if steps != nil {
		m.Sources = append(m.Sources, fmt.Sprintf("memory_stats() log %s (%s)", in.StatsName, units.Plural(len(steps.Records), "record")))
	}
	if !haveOrigin {
		switch {
		case gpu != nil:
			origin = gpu.FirstUS
		case steps != nil:
			for _, r := range steps.Records {
				if r.HasTime {
					origin = r.TimeUS
					break
				}
			}
		}
	}
	x := func(us int64) float64 { return htmlX(us-origin, true) }

	if gpu != nil {
		if haveOrigin && (dg == nil || dg.GPU != gpu.GPU) {
			return nil, fmt.Errorf("device %d: monitor.Gaps set no gap against GPU %d", dev, gpu.GPU)
		}
		m.addSMI(in, dev, gpu, dg, reserved, haveOrigin, origin, x)
	}
	if steps != nil {
		m.addSteps(steps, agree, haveOrigin, origin, x)
	}
	return m, nil
}

// addSMI adds the nvidia-smi log of gpu: its used memory, the part over
// the trace, its gap dg to the replayed reserved bytes (monitor.Gaps';
// nil when the trace covers no time) and the notes on them.
func (m *Monitor) addSMI(in *MonitorInput, dev int, gpu *monitor.GPUSummary, dg *monitor.DeviceGap, reserved monitor.Series, haveOrigin bool, origin int64, x func(int64) float64) {
	var lastUS int64
	if haveOrigin {
		lastUS = reserved.TimesUS[len(reserved.TimesUS)-1]
	}
	times, used := make([]int64, len(gpu.Series)), make([]int64, len(gpu.Series))
	for i, smp := range gpu.Series {
		times[i], used[i] = smp.TimeUS, smp.Used
	}
	for _, i := range timeline.DownsampleMinMax(times, monitorBuckets, nil, used) {
		smp := gpu.Series[i]
		m.Used = append(m.Used, [2]float64{x(smp.TimeUS), float64(smp.Used)})
		if haveOrigin && smp.TimeUS >= origin && smp.TimeUS <= lastUS {
			m.Overlay = append(m.Overlay, [2]float64{x(smp.TimeUS), float64(smp.Used)})
		}
	}
	m.Notes = append(m.Notes, monitorview.SMIClimbVerdict(gpu, in.Loc))
	if haveOrigin {
		if len(m.Overlay) == 0 {
			m.Warnings = append(m.Warnings, alignmentHint(gpu, reserved, in.Loc))
		}
		g := dg.Gap
		// The page shows one snapshot: its trace needs no name.
		gv := &monitorview.GapView{GPU: dg.GPU, Device: dg.Device, Against: "replayed from the snapshot's trace", Gap: g}
		if dg.Steps != nil {
			gv.StepAt = monitorview.StepAt(dg.Steps, in.Loc)
		}
		if len(g.Points) > 0 {
			m.Notes = append(m.Notes, monitorview.GapLines(gv, in.Loc)...)
		}
		times, gaps := make([]int64, len(g.Points)), make([]int64, len(g.Points))
		for i, p := range g.Points {
			times[i], gaps[i] = p.TimeUS, p.Gap
		}
		for _, i := range timeline.DownsampleMinMax(times, monitorBuckets, nil, gaps) {
			m.Gap = append(m.Gap, [2]float64{x(g.Points[i].TimeUS), float64(g.Points[i].Gap)})
		}
		for _, j := range g.Jumps {
			m.Jumps = append(m.Jumps, Marker{X: int64(x(j.TimeUS)), Bytes: j.Bytes, Label: units.SignedBytes(j.Bytes)})
		}
	}
	m.Explanation = monitorview.GapExplanation
}

// addSteps adds the memory_stats() log of one device: its figures per
// step, its agreement with the replay (monitor.Gaps'; nil when the trace
// covers no time) and the verdicts on it.
func (m *Monitor) addSteps(steps *monitor.StepsDevice, agree *monitor.DeviceAgreement, haveOrigin bool, origin int64, x func(int64) float64) {
	for i, r := range steps.Records {
		if r.HasTime {
			m.StepAllocated = append(m.StepAllocated, [2]float64{x(r.TimeUS), float64(r.Stats.AllocatedBytes[stats.PoolAll].Current)})
			m.StepReserved = append(m.StepReserved, [2]float64{x(r.TimeUS), float64(r.Stats.ReservedBytes[stats.PoolAll].Current)})
			m.StepNames = append(m.StepNames, monitorview.StepLabel(steps, i))
		}
	}
	if haveOrigin {
		if agree != nil && agree.Checked > 0 {
			m.Notes = append(m.Notes, monitorview.AgreeText(steps, agree.Agreement, "The memory_stats() log", "the snapshot"))
		} else {
			m.Warnings = append(m.Warnings, "No record of the memory_stats() log falls within the snapshot's trace: they cannot be compared.")
		}
	}
	m.Notes = append(m.Notes, monitorview.ClimbVerdict(steps, steps.Allocated, "allocated memory (memory_stats() log)"),
		monitorview.ClimbVerdict(steps, steps.Reserved, "reserved memory (memory_stats() log)"), monitorview.RetryVerdict(steps))
	for _, i := range monitorview.PickRows(steps, 40) {
		r := steps.Records[i]
		st := r.Stats
		step, tm := "-", "-"
		if r.HasStep {
			step = fmt.Sprint(r.Step)
		}
		if r.HasTime && haveOrigin {
			tm = fmt.Sprintf("%.3f", float64(r.TimeUS-origin)/1e6)
		}
		m.Steps = append(m.Steps, []string{step, tm,
			units.Bytes(st.AllocatedBytes[stats.PoolAll].Current), units.Bytes(st.AllocatedBytes[stats.PoolAll].Peak),
			units.Bytes(st.ReservedBytes[stats.PoolAll].Current), units.Bytes(st.ReservedBytes[stats.PoolAll].Peak),
			units.Int(st.NumAllocRetries), units.Int(st.NumOOMs)})
	}
}

// alignmentHint says why no nvidia-smi sample falls within the trace, and
// which zone would line them up when a whole number of hours would.
func alignmentHint(g *monitor.GPUSummary, reserved monitor.Series, loc *time.Location) string {
	t0, t1 := reserved.TimesUS[0], reserved.TimesUS[len(reserved.TimesUS)-1]
	s := fmt.Sprintf("No nvidia-smi sample falls within the trace: the log runs from %s to %s, the trace from %s to %s (both in %s).",
		time.UnixMicro(g.FirstUS).In(loc).Format(time.DateTime), time.UnixMicro(g.LastUS).In(loc).Format(time.DateTime),
		time.UnixMicro(t0).In(loc).Format(time.DateTime), time.UnixMicro(t1).In(loc).Format(time.DateTime), loc)
	off := float64(t0-g.FirstUS) / 3.6e9
	if h := math.Round(off); h != 0 && math.Abs(off-h) < 0.25 {
		_, cur := time.UnixMicro(g.FirstUS).In(loc).Zone()
		s += fmt.Sprintf(" The log's timestamps line up if they were written in UTC%+d: try --tz %+03d:00.", cur/3600-int(h), cur/3600-int(h))
	} else {
		s += " Check --tz: nvidia-smi writes the local time of the machine it ran on."
	}
	return s
}

// htmlMonitorChart draws the monitoring chart of d: nvidia-smi's
// memory.used, PyTorch's reserved bytes, the gap between them, and the
// stats log's records, against the timeline's x axis.
func htmlMonitorChart(d *DeviceView) (template.HTML, json.RawMessage, error) {
	m := d.Monitor
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{ChartID: htmlDeviceChartID("monitor", d), Width: "100%", Height: "380px"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", Enterable: opts.Bool(false)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "0"}),
		charts.WithGridOpts(opts.Grid{Left: "70", Right: "40", Top: "50", Bottom: "90"}),
		charts.WithDataZoomOpts(
			opts.DataZoom{Type: "inside", XAxisIndex: []int{0}, FilterMode: "none", Start: 0, End: 100},
			opts.DataZoom{Type: "slider", XAxisIndex: []int{0}, FilterMode: "none", Start: 0, End: 100},
		),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Name: "time (s) since the first trace entry", NameLocation: "middle", NameGap: 28, Min: "dataMin", Max: "dataMax"}),
		charts.WithYAxisOpts(opts.YAxis{Type: "value", Min: 0}),
	)
	points := func(pts [][2]float64) []opts.LineData {
		out := make([]opts.LineData, len(pts))
		for i, p := range pts {
			out[i] = opts.LineData{Value: []any{p[0], p[1]}}
		}
		return out
	}
	noSymbol := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false)})
	if len(m.Used) > 0 {
		used := []charts.SeriesOpts{noSymbol,
			charts.WithLineStyleOpts(opts.LineStyle{Width: 2, Color: htmlColorSMI}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: htmlColorSMI})}
		line.AddSeries("nvidia-smi memory.used", points(m.Used), used...)
	}
	if len(m.Reserved) > 0 {
		line.AddSeries("PyTorch reserved (snapshot)", points(m.Reserved),
			charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)}),
			charts.WithLineStyleOpts(opts.LineStyle{Width: 1.5, Type: "dashed", Color: htmlColorReserved}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: htmlColorReserved}))
	}
	if len(m.Gap) > 0 {
		gap := []charts.SeriesOpts{noSymbol,
			charts.WithLineStyleOpts(opts.LineStyle{Width: 1.5, Color: htmlColorGap}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: htmlColorGap}),
			charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.2), Color: htmlColorGap})}
		if len(m.Jumps) > 0 {
			var marks []opts.MarkLineNameXAxisItem
			for _, j := range m.Jumps {
				marks = append(marks, opts.MarkLineNameXAxisItem{Name: htmlSafe(j.Label), XAxis: float64(j.X)})
			}
			gap = append(gap, charts.WithMarkLineNameXAxisItemOpts(marks...),
				charts.WithMarkLineStyleOpts(opts.MarkLineStyle{
					Symbol:    []string{"none", "none"},
					Label:     &opts.Label{Show: opts.Bool(true), Position: "end", Formatter: "{b}", FontSize: 11, Color: htmlColorGap},
					LineStyle: &opts.LineStyle{Color: htmlColorGap, Width: 1, Type: "dotted"},
				}))
		}
		line.AddSeries("outside PyTorch (used − reserved)", points(m.Gap), gap...)
	}
	if len(m.StepAllocated) > 0 {
		sym := charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(true), Symbol: "circle", SymbolSize: 5})
		line.AddSeries("allocated at step end (memory_stats)", points(m.StepAllocated), sym,
			charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Color: htmlColorStepAlloc}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: htmlColorStepAlloc}))
		line.AddSeries("reserved at step end (memory_stats)", points(m.StepReserved), sym,
			charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Color: htmlColorStepRes}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: htmlColorStepRes}))
	}
	return htmlRenderChart(line, htmlDeviceChartID("monitor", d), "380px")
}

const (
	htmlColorSMI       = "#e15759"
	htmlColorGap       = "#f28e2c"
	htmlColorStepAlloc = "#4e79a7"
	htmlColorStepRes   = "#59a14f"
)
