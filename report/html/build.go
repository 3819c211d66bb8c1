package html

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/explain"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/analyze/timeline"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/leakview"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// Options tunes [Build]. Zero values pick the defaults.
type Options struct {
	// Title names the report, usually the snapshot's file name.
	Title string
	// SizeOnDisk is the size of the snapshot file in bytes, for the
	// description of the file.
	SizeOnDisk int64
	// Devices selects devices; nil means every device with segments or
	// trace entries.
	Devices []int
	// Top is the number of stack groups drawn on the timeline (the rest
	// are summed as "other") and of leak rows. Default 10.
	Top int
	// Buckets is the number of time buckets of the downsampled timeline;
	// each keeps up to six points. Default 400.
	Buckets int
	// MaxPoints caps the points drawn per series of the timeline, about
	// the chart's width in pixels (fewer buckets are used until they
	// fit). Default 500: in headless Chromium the 2M-entry page took
	// 2.7 s to paint its stacked areas at 1000 points, 0.5 to 1.0 s at 500.
	MaxPoints int
	// MaxAnnotations is the most record_function ranges shaded on a
	// timeline (the longest are kept). Default 100.
	MaxAnnotations int
	// MaxLiveEntries is the longest trace whose every allocation the
	// page embeds, so that clicking the timeline shows the state after
	// any entry; longer traces get MaxStates precomputed states.
	// Default 100000.
	MaxLiveEntries int
	// MaxStates is the most precomputed states of a longer trace.
	// Default 48.
	MaxStates int
	// MaxSegments is the most segments drawn (the largest are kept).
	// Default 200.
	MaxSegments int
	// MaxDevices is the most device sections: the devices with the most
	// trace entries and blocks are kept, the others named in a warning.
	// Default 64 (a file of 10^5 one-entry devices would otherwise make a
	// page of 10^5 charts).
	MaxDevices int
	// Monitor, when set, adds to each device the monitoring logs set
	// against its timeline (html_monitor.go).
	Monitor *MonitorInput
	// LevelPoints is the most points of a long trace's multi-resolution
	// index (timeline.LevelOptions.Points), from which the page redraws
	// the part a zoom shows. Default 140000 (about 60 bytes of page each
	// on the 2M-entry file); negative: none.
	LevelPoints int
	// Regions and PerRegion pick the single allocations the page can draw
	// on their own at any zoom: the PerRegion largest live in each of
	// Regions regions of the trace. Defaults 2048 and 8.
	Regions, PerRegion int
	// EnvelopePoints caps the points of a long trace drawn at full width
	// as its steps' envelope (timeline.StepEnvelope): up to three per
	// step, runs of steps when they do not fit. Default 1536: one envelope
	// per step up to 510 steps (the 2M-entry file's 469 in 1,411 points).
	EnvelopePoints int
}

func (o *Options) defaults() {
	if o.Top <= 0 {
		o.Top = 10
	}
	if o.Buckets <= 0 {
		o.Buckets = 400
	}
	if o.MaxPoints <= 0 {
		o.MaxPoints = 500
	}
	if o.MaxAnnotations <= 0 {
		o.MaxAnnotations = 100
	}
	if o.MaxLiveEntries <= 0 {
		o.MaxLiveEntries = 100000
	}
	if o.MaxStates <= 0 {
		o.MaxStates = 48
	}
	if o.MaxSegments <= 0 {
		o.MaxSegments = 200
	}
	if o.MaxDevices <= 0 {
		o.MaxDevices = 64
	}
	if o.Title == "" {
		o.Title = "snapshot"
	}
	if o.LevelPoints == 0 {
		o.LevelPoints = 140000
	}
	if o.Regions <= 0 {
		o.Regions = 2048
	}
	if o.PerRegion <= 0 {
		o.PerRegion = 8
	}
	if o.EnvelopePoints <= 0 {
		o.EnvelopePoints = 1536
	}
}

// busiestDevices returns the at most max devices of devices with the most
// trace entries and blocks, in their order. One pass over the segments.
func busiestDevices(s *snapshot.Snapshot, devices []int, max int) []int {
	if len(devices) <= max {
		return devices
	}
	blocks := map[int]int{}
	for i := range s.Segments {
		blocks[s.Segments[i].Device] += len(s.Segments[i].Blocks)
	}
	weight := func(d int) int {
		w := blocks[d]
		if d >= 0 && d < len(s.Traces) {
			w += len(s.Traces[d])
		}
		return w
	}
	idx := make([]int, len(devices))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return weight(devices[idx[a]]) > weight(devices[idx[b]]) })
	idx = idx[:max]
	sort.Ints(idx)
	out := make([]int, len(idx))
	for i, k := range idx {
		out[i] = devices[k]
	}
	return out
}

// Analysis returns the options of the analysis.File whose devices
// [Build] draws with o: full replays, capturing the exact states a
// trace longer than MaxLiveEntries shows (analysis.PageStates).
func (o Options) Analysis() analysis.Options {
	o.defaults()
	return analysis.Options{Mode: replay.Full, States: analysis.PageStates(o.MaxLiveEntries, o.MaxStates)}
}

// page returns the options of the device analyses the page draws.
func (o *Options) page() analysis.PageOptions {
	lv := timeline.LevelOptions{Points: max(o.LevelPoints, 0), Regions: o.Regions, PerRegion: o.PerRegion}
	if o.LevelPoints < 0 {
		lv = timeline.LevelOptions{}
	}
	return analysis.PageOptions{Top: o.Top, Buckets: o.Buckets, MaxPoints: o.MaxPoints, MaxLiveEntries: o.MaxLiveEntries,
		Levels: lv, EnvelopePoints: o.EnvelopePoints}
}

// Build returns what [Write] draws of the file f (made with
// opt.Analysis()): each device's figures, replay and analyses come from
// f, which replays each device once. It does no I/O.
func Build(f *analysis.File, opt Options) (*Report, error) {
	s := f.Snap
	opt.defaults()
	devices := opt.Devices
	if devices == nil {
		devices = s.Devices()
	}
	all := len(devices)
	devices = busiestDevices(s, devices, opt.MaxDevices)
	// One replay per device, shared by the info view (its end-state check
	// and seeding), the timeline, the summary table and the leaks. The
	// info view reads the file while the replays run, and waits for them
	// only where it needs them.
	f.Start(devices)
	var only []int // nil: every device
	if len(devices) < all {
		only = devices
	}
	infoc := make(chan *report.Info, 1)
	go func() { infoc <- report.NewInfo(opt.Title, opt.SizeOnDisk, s.Format, f.Info(only)) }()
	r := &Report{Title: opt.Title, Stacks: [][]string{}, Devices: []DeviceView{}}
	b := &htmlBuilder{f: f, s: s, opt: opt, r: r, stackIndex: map[snapshot.StackID]int{}, frames: stacks.NewFrameTable(s)}
	pages := make([]*analysis.Page, len(devices))
	for k, dev := range devices {
		pages[k] = f.Page(dev, opt.page())
	}
	info := <-infoc
	b.info = info
	// explain's findings over the same replays, leaks and what-if
	// simulations as the page's.
	exps, err := f.ExplainPages(devices, pages, opt.Top, explain.Options{})
	if err != nil {
		return nil, err
	}
	b.explained = map[int]*explain.Device{}
	for _, e := range exps {
		b.explained[e.Device] = e
	}
	var buf bytes.Buffer
	if err := report.WriteInfo(&buf, info); err != nil {
		return nil, err
	}
	r.Info = buf.String()
	r.Warnings = append([]string{}, info.Warnings...)
	if r.DevicesLeftOut = all - len(devices); r.DevicesLeftOut > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("the file has %s; the report shows the %d with the most trace entries and blocks (snapview report --device N shows another)",
			units.Plural(all, "device"), len(devices)))
	}
	var gaps *monitorGaps
	if opt.Monitor != nil {
		if gaps, err = findMonitorGaps(opt.Monitor, f, opt.Title, devices); err != nil {
			return nil, err
		}
	}
	for k, dev := range devices {
		d, err := b.device(dev, pages[k])
		if err != nil {
			return nil, err
		}
		if opt.Monitor != nil {
			res, _ := f.Replay(dev)
			if d.Monitor, err = buildMonitor(opt.Monitor, gaps, s, dev, res, d.Timeline); err != nil {
				return nil, err
			}
		}
		r.Devices = append(r.Devices, *d)
	}
	if h := f.Host(); h.Segments > 0 || h.Entries > 0 {
		// Host keys with nothing in them are told by the file's
		// description alone, as state and leaks do.
		r.Hosts = append(r.Hosts, b.host(h))
	}
	return r, nil
}

// host is the section of the file's pinned host memory.
func (b *htmlBuilder) host(h *info.HostMemory) HostView {
	v := HostView{Key: "host", Lines: hostview.FigureLines(h), Live: []HostLive{}}
	for _, l := range h.Live {
		v.Live = append(v.Live, HostLive{Bytes: l.Bytes, Blocks: l.Count, Stack: b.stack(l.Stack)})
		v.LiveBytes += l.Bytes
	}
	return v
}

type htmlBuilder struct {
	f          *analysis.File
	explained  map[int]*explain.Device
	s          *snapshot.Snapshot
	opt        Options
	r          *Report
	info       *report.Info
	stackIndex map[snapshot.StackID]int
	frames     *stacks.FrameTable
}

// stack returns the index of id in the report's stack table, adding it;
// -1 for the empty stack.
func (b *htmlBuilder) stack(id snapshot.StackID) int {
	if len(b.s.Stack(id)) == 0 {
		return -1
	}
	if i, ok := b.stackIndex[id]; ok {
		return i
	}
	// The text views' presentation (stackLines), every line: the page
	// folds them under their first.
	frames := b.frames.Lines(id, stacks.LineOptions{})
	b.r.Stacks = append(b.r.Stacks, frames)
	b.stackIndex[id] = len(b.r.Stacks) - 1
	return len(b.r.Stacks) - 1
}

func (b *htmlBuilder) device(dev int, a *analysis.Page) (*DeviceView, error) {
	s := b.s
	d := &DeviceView{Device: dev, Notes: []string{}, OOMs: []Marker{}, Annotations: []Range{}, Segments: []Segment{}, Leaks: []Leak{}}
	trace := replay.DeviceTrace(s, dev)
	switch i := slices.IndexFunc(b.info.Devices, func(di info.DeviceInfo) bool { return di.Device == dev }); {
	case len(trace) == 0 && !s.HasDeviceTraces:
		d.Notes = append(d.Notes, "The file has no trace (no memory history was recorded): only the state at dump time is shown.")
	case len(trace) == 0:
		d.Notes = append(d.Notes, "No trace entries for this device.")
	case i >= 0:
		d.Notes = append(d.Notes, fmt.Sprintf("Trace of %s entries, %s.", units.Int(len(trace)), report.CoverageText(&b.info.Devices[i])))
	}
	if e := b.explained[dev]; e != nil {
		// explain's findings, worded as the text and JSON views word them.
		for _, f := range verdictview.NewExplainView(s, []*explain.Device{e}).Devices[0].Findings {
			d.Findings = append(d.Findings, Finding{Severity: string(f.Severity), Kind: string(f.Kind), Verdict: f.Verdict,
				Evidence: strings.Join(f.Evidence, "; "), Blockers: verdictview.ExplainBlockerLines(&f, 3), Where: f.Where, Action: f.Action})
		}
	}
	res, err := b.f.Replay(dev)
	if err != nil {
		// Nothing for this device in the file (an empty snapshot).
		d.Notes = append(d.Notes, err.Error())
		res = &replay.Result{Device: dev, PeakIndex: -1, Stats: *stats.CurrentStats(s, dev)}
	}
	if k := res.Stats.Known; len(res.Allocated) > 0 && k.History != stats.Exact {
		// The one trust rule's verdict, worded as every view words it.
		d.Notes = append(d.Notes, "History: "+kit.TrustText(k)+"; the timeline is the replay's.")
	}

	// The memory_summary() table `snapview summary --format torch`
	// prints, from the same replay.
	ms, notes := b.f.Stats(dev)
	d.Notes = append(d.Notes, notes...)
	var buf bytes.Buffer
	if err := report.WriteTorchSummary(&buf, ms); err != nil {
		return nil, fmt.Errorf("device %d: %w", dev, err)
	}
	d.Summary = buf.String()
	if n := kit.RequestedNote(ms.Known); n != "" {
		// The one verdict on the requested sizes, worded as every view
		// words it; the tooltips show "?" for them.
		d.Notes = append(d.Notes, n)
		d.RequestedUnknown = true
	}

	if len(trace) == 0 || len(res.Allocated) != len(trace) {
		d.SegmentsAt = "at dump time"
		b.fileSegments(d)
		d.LeaksNote = "Finding leaks needs a trace (torch.cuda.memory._record_memory_history)."
		return d, nil
	}
	timeUS := a.TimeUS
	if a.Err != nil {
		if a.ErrLeaks {
			return nil, fmt.Errorf("device %d: %w", dev, a.Err)
		}
		return nil, a.Err
	}
	if a.Timeline != nil {
		b.timeline(d, res, trace, timeUS, a)
	} else {
		d.TimelineNote = fmt.Sprintf("The trace has %s: there is nothing to draw over time; the allocator state after it is below.", units.Plural(len(trace), "entry"))
	}
	// The page opens at the first OOM's state when the trace has one (the
	// state the user came for), else at the peak's.
	st := a.Peak
	d.SegmentsAt = fmt.Sprintf("at the peak (after entry %s, %s allocated)", units.Int(res.PeakIndex), units.Bytes(res.Allocated[res.PeakIndex]))
	if len(res.OOMs) > 0 {
		i := res.OOMs[0]
		oom := a.State(i)
		if oom == nil {
			oom, _ = res.StateAt(i)
		}
		if oom != nil {
			st = oom
			d.SegmentsAt = fmt.Sprintf("at the OOM (after entry %s: a request of %s failed)", units.Int(i), units.Bytes(trace[i].Size))
		}
	}
	b.stateSegments(d, st)
	rep := b.leaks(d, a.Leaks)
	if d.Timeline != nil {
		b.steps(d, rep, timeUS)
		htmlChooseAxis(d, timeUS)
		b.inspect(d, res, trace, a)
	}
	return d, nil
}

// steps keeps the training steps the leak report found (annotations or a
// repeating allocation; not equal slices) as ranges of the timeline.
func (b *htmlBuilder) steps(d *DeviceView, rep *leaks.LeakReport, timeUS []int64) {
	if rep == nil || (rep.Steps.Source != steps.StepsAnnotation && rep.Steps.Source != steps.StepsPattern) {
		return
	}
	d.StepsName = "from a repeating allocation"
	if rep.Steps.Source == steps.StepsAnnotation {
		d.StepsName = "from the " + rep.Steps.Name + " annotations"
	}
	for _, sl := range rep.Slices {
		if sl.Step == 0 {
			continue
		}
		r := Range{Name: fmt.Sprintf("step %d", sl.Step), I0: sl.Start, I1: sl.End, X0: int64(sl.Start), X1: int64(sl.End)}
		if timeUS != nil {
			r.X0, r.X1 = timeUS[sl.Start]-timeUS[0], timeUS[sl.End]-timeUS[0]
		}
		d.Steps = append(d.Steps, r)
	}
}

// htmlChooseAxis picks the x axis the timeline opens on: the one that
// gives the steps more width (memory_viz draws by entry index; a slow
// first step or a long start-up squeezes the others on a time axis), and
// without steps time, unless one idle stretch covers most of it.
func htmlChooseAxis(d *DeviceView, timeUS []int64) {
	switch {
	case timeUS == nil:
		d.XByIndex = true
		d.AxisNote = "The x axis is the trace entry (the entries have no times)."
	case len(d.Steps) >= 2:
		n := len(timeUS)
		span := float64(max(timeUS[n-1]-timeUS[0], 1))
		tw, iw := make([]float64, len(d.Steps)), make([]float64, len(d.Steps))
		for k, st := range d.Steps {
			tw[k] = float64(st.X1-st.X0) / span
			iw[k] = float64(st.I1-st.I0) / float64(n)
		}
		slices.Sort(tw)
		slices.Sort(iw)
		med := len(tw) / 2
		d.XByIndex = iw[med] > tw[med]
		if d.XByIndex {
			d.AxisNote = fmt.Sprintf("The x axis is the trace entry, which spreads the %d steps wider than time does (median step %.2g%% of the width, %.2g%% by time); switch to time above the chart.", len(d.Steps), 100*iw[med], 100*tw[med])
		} else {
			d.AxisNote = fmt.Sprintf("The x axis is time, which spreads the %d steps wider than the entry index does (median step %.2g%% of the width, %.2g%% by entry); switch to entries above the chart.", len(d.Steps), 100*tw[med], 100*iw[med])
		}
	case d.Zoom != nil:
		d.XByIndex = true
		d.AxisNote = "The x axis is the trace entry: by time, one idle stretch would cover most of the chart; switch to time above the chart."
	default:
		d.AxisNote = "The x axis is time since the first entry; switch to entries above the chart."
	}
}

// leaks fills the leak table from leaks.Leaks with the options
// `snapview leaks` uses by default: the live allocations at the end of
// the trace (or at its last OOM), grouped by stack and ranked by how
// steadily they grew over the training steps.
func (b *htmlBuilder) leaks(d *DeviceView, rep *leaks.LeakReport) *leaks.LeakReport {
	at := "at the end of the trace"
	if rep.At == rep.LastOOM && rep.At >= 0 {
		at = "at the last OOM"
	}
	text := fmt.Sprintf("%d %s", rep.Steps.Count, rep.Steps.Source)
	switch rep.Steps.Source {
	case steps.StepsAnnotation:
		text = fmt.Sprintf("%d steps from the %s annotations", rep.Steps.Count, rep.Steps.Name)
	case steps.StepsPattern:
		text = fmt.Sprintf("%d steps from an allocation that repeats once per step", rep.Steps.Count)
	case steps.StepsSlices:
		text = fmt.Sprintf("%d equal slices (no steps found)", rep.Steps.Count)
	}
	suspicious := 0
	for i := range rep.Groups {
		g := &rep.Groups[i]
		// Red for the groups that look like leaks: a trace without steps
		// whose growth comes and goes ("uneven") is not one.
		red := g.Verdict.Kind.Suspicious() && g.Verdict.Kind != leaks.VerdictUneven
		if red {
			suspicious++
		}
		// Over equal slices or a few repetitions of one allocation,
		// growth cannot be judged (explain's growth-unjudged): not red.
		red = red && rep.Steps.JudgesGrowth()
		detail := g.Verdict.String()
		if len(g.Annotations) > 0 {
			// The annotate entries' metadata on the group's live allocations.
			detail += "; " + leakview.LeakAnnotationLine(g)
		}
		if len(g.Regions) > 0 {
			// The torch.compile regions its live bytes were allocated in.
			detail += "; " + leakview.LeakRegionLine(g)
		}
		d.Leaks = append(d.Leaks, Leak{
			Label: b.frames.Where(g.Stack), Bytes: g.Bytes, Count: g.Count, Stack: b.stack(g.Stack),
			Detail: detail, Suspicious: red,
			Score: g.Score, Growth: htmlGrowth(g.Growth), GrowthStep0: rep.Steps.Prologue,
		})
	}
	d.LeaksNote = fmt.Sprintf("%s in %d allocations live %s, grouped by allocation stack and ranked by how steadily each group grew over %s: %d of the %d groups shown look like leaks (snapview leaks has the details).",
		units.Bytes(rep.LiveBytes), rep.LiveCount, at, text, suspicious, len(rep.Groups))
	if suspicious > 0 && !rep.Steps.JudgesGrowth() {
		d.LeaksNote = fmt.Sprintf("%s in %d allocations live %s, grouped by allocation stack and ranked by how steadily each group grew over %s: %d of the %d groups shown grew, but over these growth cannot be judged (one long step, a forward pass, grows as well; snapview explain says why).",
			units.Bytes(rep.LiveBytes), rep.LiveCount, at, text, suspicious, len(rep.Groups))
	}
	if rep.TotalGroups > len(rep.Groups) {
		d.LeaksNote += fmt.Sprintf(" %d more groups not shown.", rep.TotalGroups-len(rep.Groups))
	}
	return rep
}

// htmlGrowth returns a group's live bytes at the end of each slice.
func htmlGrowth(g []leaks.GrowthPoint) []int64 {
	out := make([]int64, len(g))
	for i, p := range g {
		out[i] = p.Bytes
	}
	return out
}

func (b *htmlBuilder) timeline(d *DeviceView, res *replay.Result, trace []snapshot.TraceEntry, timeUS []int64, a *analysis.Page) {
	tl := a.Timeline
	d.Timeline = tl
	xOf := func(i int) int64 {
		if timeUS == nil {
			return int64(i)
		}
		return timeUS[i] - timeUS[0]
	}

	byLabel := map[string][]int{} // groups by the label Where gives
	for k, g := range tl.Groups {
		hg := Group{Stack: -1, Other: g.Other}
		switch {
		case g.Other:
			hg.Label = fmt.Sprintf("other (%d stacks)", g.Stacks)
			if g.Stacks == 1 {
				hg.Label = "other (1 stack)"
			}
		default:
			hg.Stack = b.stack(g.Stack)
			hg.Label = b.frames.Where(g.Stack)
			byLabel[hg.Label] = append(byLabel[hg.Label], k)
		}
		d.Groups = append(d.Groups, hg)
	}
	b.disambiguate(d, tl, byLabel)
	b.singles(d, res, tl, xOf)

	if p := res.PeakIndex; p >= 0 {
		label := units.Bytes(res.Allocated[p]) + " allocated"
		if timeUS != nil {
			label += fmt.Sprintf(" at %.3f s", float64(xOf(p))/1e6)
		} else {
			label += " after entry " + units.Int(p)
		}
		d.Peak = &Marker{Index: p, X: xOf(p), Bytes: res.Allocated[p], Label: label}
	}
	verdict := ""
	if a.WhatIf != nil {
		verdict = verdictview.WhatifOOMVerdict(a.WhatIf)
		d.Notes = append(d.Notes, verdict)
	}
	for _, i := range res.OOMs {
		e := &trace[i]
		at := "entry " + units.Int(i)
		if timeUS != nil {
			at += fmt.Sprintf(", %.3f s", float64(xOf(i))/1e6)
		}
		label := fmt.Sprintf("OOM at %s: %s requested (rounded) while %s allocated, %s reserved; the device had %s free",
			at, units.Bytes(e.Size), units.Bytes(res.Allocated[i]), units.Bytes(res.Reserved[i]), units.Bytes(e.DeviceFree()))
		if verdict != "" {
			label += ". " + verdict
		}
		d.OOMs = append(d.OOMs, Marker{Index: i, X: xOf(i), Bytes: e.Size, Label: label})
	}
	if timeUS != nil {
		d.FirstUS, d.HasTime = timeUS[0], true
		keep := append([]int{res.PeakIndex}, res.OOMs...)
		d.Zoom = htmlActiveZoom(timeUS, keep)
		b.annotations(d, timeUS)
	} else if len(b.s.Annotations) > 0 {
		d.Notes = append(d.Notes, "The trace entries have no time_us: record_function ranges cannot be placed on the timeline.")
	}
}

// htmlActiveZoom returns the part of a trace the timeline opens on when
// one stretch without entries covers more than half of its time: a
// start-up before the first step (model loading, data loader workers,
// cuDNN initialisation) or a long wait at the end would squeeze every
// allocation into a spike at one edge. The view leaves out the side of
// the gap that holds at most a fifth of the entries and none of keep
// (the peak, the OOMs), and keeps a margin of a twentieth of what it
// shows, rounded outwards to a round time. Nil when there is no such gap.
func htmlActiveZoom(timeUS []int64, keep []int) *Zoom {
	n := len(timeUS)
	if n < 3 {
		return nil
	}
	t0, span := timeUS[0], timeUS[n-1]-timeUS[0]
	gap := 0 // the longest gap is between entries gap and gap+1
	for i := 1; i+1 < n; i++ {
		if timeUS[i+1]-timeUS[i] > timeUS[gap+1]-timeUS[gap] {
			gap = i
		}
	}
	idle := timeUS[gap+1] - timeUS[gap]
	if span <= 0 || 2*idle <= span {
		return nil
	}
	keptBefore, keptAfter := false, false
	for _, k := range keep {
		switch {
		case k < 0:
		case k <= gap:
			keptBefore = true
		default:
			keptAfter = true
		}
	}
	before, after := gap+1, n-gap-1
	var lo, hi int
	var note string
	switch {
	case 5*before <= n && !keptBefore:
		lo, hi = gap+1, n-1
		note = fmt.Sprintf("The chart opens on the part with the activity: before it, %s and then %s without any.",
			units.Plural(before, "entry"), units.Seconds(idle, 3))
	case 5*after <= n && !keptAfter:
		lo, hi = 0, gap
		note = fmt.Sprintf("The chart opens on the part with the activity: after it, %s without any and then %s.",
			units.Seconds(idle, 3), units.Plural(after, "entry"))
	default:
		return nil
	}
	// The edges at round times (a tenth of the power of ten below the
	// width), where the time axis starts its ticks.
	width := timeUS[hi] - timeUS[lo]
	round := int64(1)
	for round*100 <= width {
		round *= 10
	}
	x0 := max(timeUS[lo]-t0-width/20, 0) / round * round
	x1 := min((timeUS[hi]-t0+width/20+round-1)/round*round, span)
	return &Zoom{
		X0:   x0,
		X1:   x1,
		Note: note + " Drag the slider's handles or wheel out to see the whole trace.",
	}
}

// annotations keeps the device's record_function ranges (steps.Ranges,
// the pairing every view shares: a START without END runs to the last
// entry, an END without START from the first) that overlap the trace,
// the longest first when there are too many.
func (b *htmlBuilder) annotations(d *DeviceView, timeUS []int64) {
	t0, t1 := timeUS[0], timeUS[len(timeUS)-1]
	var all []Range
	for _, r := range steps.Ranges(b.s, d.Device, t1) {
		if r.EndUS < t0 || r.StartUS > t1 {
			continue
		}
		x0, x1 := max(r.StartUS, t0), min(r.EndUS, t1)
		i0, _ := slices.BinarySearch(timeUS, x0)
		i1, _ := slices.BinarySearch(timeUS, x1+1)
		all = append(all, Range{Name: r.Name, X0: x0 - t0, X1: x1 - t0, I0: i0, I1: max(i0, i1-1)})
	}
	d.AnnotationsTotal = len(all)
	if len(all) > b.opt.MaxAnnotations {
		slices.SortStableFunc(all, func(p, q Range) int {
			return cmp.Compare(q.X1-q.X0, p.X1-p.X0)
		})
		all = all[:b.opt.MaxAnnotations]
	}
	slices.SortStableFunc(all, func(p, q Range) int {
		if c := cmp.Compare(p.X0, q.X0); c != 0 {
			return c
		}
		if c := cmp.Compare(q.X1, p.X1); c != 0 {
			return c
		}
		return strings.Compare(p.Name, q.Name)
	})
	d.Annotations = append(d.Annotations, all...)
}

// htmlStateName maps a block state to the report's three kinds.
func htmlStateName(st snapshot.BlockState) string {
	switch st {
	case snapshot.StateActiveAllocated:
		return BlockAllocated
	case snapshot.StateActivePendingFree:
		return BlockPendingFree
	}
	return BlockFree
}

func (b *htmlBuilder) stateSegments(d *DeviceView, st *replay.State) {
	for _, sg := range st.Segments {
		hs := Segment{Addr: sg.Addr.String(), Size: sg.Size, Stream: sg.Stream, Pool: sg.Pool.String(), Large: sg.Large, Expandable: sg.Expandable}
		for _, bl := range sg.Blocks {
			hs.Blocks = append(hs.Blocks, Block{
				Offset: int64(bl.Addr - sg.Addr), Size: bl.Size, Requested: bl.Requested,
				State: htmlStateName(bl.State), Stack: b.blockStack(bl.State, bl.Stack),
			})
		}
		d.Segments = append(d.Segments, hs)
	}
	b.limitSegments(d)
}

func (b *htmlBuilder) fileSegments(d *DeviceView) {
	lo, hi := b.s.DeviceSegments(d.Device)
	for i := lo; i < hi; i++ {
		sg := &b.s.Segments[i]
		if sg.Device != d.Device {
			continue
		}
		hs := Segment{Addr: sg.Address.String(), Size: sg.TotalSize, Stream: sg.Stream, Pool: sg.Pool.String(), Large: allocator.IsLargeSegment(sg), Expandable: sg.Expandable}
		for _, bl := range sg.Blocks {
			req := bl.RequestedSize
			if !bl.State.Active() {
				req = 0
			}
			hs.Blocks = append(hs.Blocks, Block{
				Offset: int64(bl.Address - sg.Address), Size: bl.Size, Requested: req,
				State: htmlStateName(bl.State), Stack: b.blockStack(bl.State, bl.Stack),
			})
		}
		d.Segments = append(d.Segments, hs)
	}
	b.limitSegments(d)
}

func (b *htmlBuilder) blockStack(st snapshot.BlockState, id snapshot.StackID) int {
	if !st.Active() {
		return -1
	}
	return b.stack(id)
}

// limitSegments sorts the segments (given in address order) largest
// first and keeps at most MaxSegments.
func (b *htmlBuilder) limitSegments(d *DeviceView) {
	d.SegmentsTotal = len(d.Segments)
	slices.SortStableFunc(d.Segments, func(p, q Segment) int { return cmp.Compare(q.Size, p.Size) })
	if len(d.Segments) > b.opt.MaxSegments {
		d.Segments = d.Segments[:b.opt.MaxSegments]
	}
}

// disambiguate tells apart the groups whose stacks [stacks.FrameTable.Where]
// names alike (two optimizer calls through one line of the program,
// leaving it at adam.py:178 and adam.py:182): each gets the frame where
// its stack leaves the others' ("at adam.py:182 _init_group"); only
// stacks that still read alike get " #2", " #3".
func (b *htmlBuilder) disambiguate(d *DeviceView, tl *timeline.Timeline, byLabel map[string][]int) {
	for label, ks := range byLabel {
		if len(ks) < 2 {
			continue
		}
		used := map[string]int{}
		for _, k := range ks {
			branch := ""
			for _, o := range ks {
				if o != k {
					if f := b.frames.BranchFrame(tl.Groups[k].Stack, tl.Groups[o].Stack); f != "" {
						branch = f
						break
					}
				}
			}
			l := label
			if branch != "" {
				l += " at " + branch
			}
			used[l]++
			if n := used[l]; n > 1 {
				l += " #" + strconv.Itoa(n)
			}
			d.Groups[k].Label = l
		}
	}
}

// singles fills d.Singles from the timeline's single allocations.
func (b *htmlBuilder) singles(d *DeviceView, res *replay.Result, tl *timeline.Timeline, xOf func(int) int64) {
	n := tl.Entries
	for _, sg := range tl.Singles {
		a := &res.Allocs[sg.Range]
		end := n
		switch {
		case a.FreeRequested >= 0:
			end = a.FreeRequested
		case a.FreeCompleted >= 0:
			end = a.FreeCompleted
		}
		s := SingleAlloc{Start: a.AllocIndex, End: end, FreeCompleted: a.FreeCompleted, Addr: uint64(a.Addr),
			Size: a.Size, Requested: a.Requested, Stack: b.stackShort(a.Stack), Group: sg.Group, X0: -1, X1: -1}
		if a.AllocIndex >= 0 {
			s.X0 = xOf(a.AllocIndex)
		}
		if end < n {
			s.X1 = xOf(end)
		}
		d.Singles = append(d.Singles, s)
	}
}
