package html

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"

	"github.com/snapview/snapview/analyze/timeline"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/third_party/echarts"
)

// Report is everything `snapview report` draws, ready to render with
// [Write]. [Build] makes it from a snapshot; tests build it by
// hand. Strings may hold anything (they come from the snapshot): the
// writer escapes them.
type Report struct {
	// Title names the report (the snapshot file).
	Title string
	// Info is what the file holds: the text `snapview info` prints.
	Info string
	// Warnings are the decoder's and the analyses' warnings.
	Warnings []string
	// Stacks are the formatted frames ("name (file:line)", innermost
	// first) of every stack the report refers to; groups, blocks and leaks
	// hold indexes into it.
	Stacks [][]string
	// Devices has one section per device, by ordinal (by file, then
	// ordinal, in a report of several files).
	Devices []DeviceView
	// DevicesLeftOut counts the devices asked for that have no section
	// (over Options.MaxDevices); a warning says so.
	DevicesLeftOut int
	// Hosts are the pinned host memory sections, one per file that holds
	// host memory (the CUDA host allocator's, apart from the devices'):
	// empty when none does.
	Hosts []HostView
	// Compare is the comparison of several files as text (the per-rank
	// table or the diff), "" for a report of one file; CompareTitle heads
	// it.
	Compare, CompareTitle string
}

// HostView is the pinned host memory of one file (analysis.File.Host),
// in its own section after the devices'.
type HostView struct {
	// File names the file in a report of several files, "" in a report of
	// one; Key is the section's element id ("host", "f1_host").
	File, Key string
	// Lines are the figures as summary prints them (hostview.FigureLines):
	// the host segments, the trace, the peaks of its replay under the
	// caching host allocator's rules with their trust, num_host_alloc and
	// num_host_free.
	Lines []string
	// Live is the pinned memory handed out at the end, by allocation
	// stack, most bytes first; LiveBytes sums it.
	Live      []HostLive
	LiveBytes int64
}

// HostLive is the pinned memory one allocation stack holds at the end:
// Bytes in Blocks blocks; Stack indexes Report.Stacks (-1: no stack
// recorded).
type HostLive struct {
	Bytes  int64
	Blocks int
	Stack  int
}

// DeviceView is the section of one device.
// Finding is one of explain's findings as the page shows it: the words of
// verdictview.ExplainFinding.
type Finding struct {
	// Severity is "error", "warning" or "info"; Kind explain's kind.
	Severity, Kind string
	Verdict        string
	Evidence       string
	// Blockers are the blocker lines, Where the other stacks' lines.
	Blockers, Where []string
	Action          string
}

type DeviceView struct {
	Device int
	// File names the file the device comes from in a report of several
	// files, "" in a report of one; Key then makes its element ids unique
	// ("f1_d0").
	File, Key string
	// YMax and XMax, when not 0, fix the top of the timeline's y axis
	// (bytes) and the end of its x axis (as timeline.Timeline.X), whose
	// start is then 0: a report of several files draws every timeline on
	// the same scale.
	YMax, XMax int64
	// FirstUS is the time_us of the device's first trace entry when
	// HasTime (the trace has times). The x values of a report of one file
	// are microseconds since it; [Merge] moves them onto one clock.
	FirstUS int64
	HasTime bool
	// Notes are short remarks shown under the device heading (trace
	// coverage, replay disagreements).
	Notes []string
	// Findings are explain's findings, shown first (before the
	// timeline).
	Findings []Finding
	// RequestedUnknown is set when the device's requested sizes are
	// unknown (stats.Known.Requested): the tooltips show "?" for a
	// block's requested bytes.
	RequestedUnknown bool

	// Timeline is the downsampled timeline; nil when the device has
	// fewer than 2 trace entries. TimelineNote then says why there is no
	// chart ("" when there is one).
	Timeline     *timeline.Timeline
	TimelineNote string
	// Groups label Timeline.Groups, in the same order.
	Groups []Group
	// Singles are the allocations the page can draw on their own
	// (Timeline.Singles), ordered by Start.
	Singles []SingleAlloc
	// Peak marks the peak of allocated bytes; nil without a trace. Its
	// Label reads after "Peak: " ("731.0 MiB allocated at 4.583 s").
	Peak *Marker
	// Zoom is the x range the timeline opens on; nil opens on the whole
	// trace.
	Zoom *Zoom
	// OOMs mark each oom entry.
	OOMs []Marker
	// Annotations are the record_function ranges drawn on the timeline;
	// AnnotationsTotal counts them all, drawn or not.
	Annotations      []Range
	AnnotationsTotal int
	// Steps are the training steps found in the trace (as `snapview
	// leaks` finds them), drawn as alternating bands; StepsName says how
	// they were found. Empty when no steps were found.
	Steps     []Range
	StepsName string
	// XByIndex is true when the timeline opens with the entry index on
	// its x axis (the page can switch to time when the trace has times);
	// AxisNote says why that axis was chosen.
	XByIndex bool
	AxisNote string
	// Inspect is what the page needs to show the allocator state at a
	// clicked moment; nil without a trace.
	Inspect *Inspect

	// Summary is the memory_summary() text, "" when unavailable.
	Summary string

	// SegmentsAt says when Segments were taken ("at the peak, entry 12").
	SegmentsAt string
	// Segments are the segments at that moment, largest first (at most
	// the limit); SegmentsTotal counts them all.
	Segments      []Segment
	SegmentsTotal int

	// Leaks are the suspected leaks, largest first; LeaksNote explains
	// what they are or why there are none.
	Leaks     []Leak
	LeaksNote string

	// Monitor sets the monitoring logs (report --smi, --stats) against
	// the timeline; nil without them.
	Monitor *Monitor
}

// Group labels one stacked area of the timeline.
type Group struct {
	// Label is the legend entry, unique within the device.
	Label string
	// Stack indexes Report.Stacks; -1 for the "other" group.
	Stack int
	// Other is true for the group of all remaining stacks.
	Other bool
}

// SingleAlloc is one allocation the timeline can draw on its own, with
// what hovering it shows.
type SingleAlloc struct {
	// Start is its alloc entry (-1: live before the trace), End the
	// entry it stops counting at (free_requested, else free_completed,
	// else the number of entries); FreeCompleted its free_completed entry
	// (-1: none).
	Start, End, FreeCompleted int
	// X0 and X1 are Start's and End's x (as Marker.X), -1 where the entry
	// is not in the trace.
	X0, X1 int64
	Addr   uint64
	// Size and Requested are bytes.
	Size, Requested int64
	// Stack indexes Report.Stacks (-1: none); Group is the index of the
	// group it is summed in.
	Stack, Group int
}

// Marker is one point of the timeline: an entry index, its x value
// (as in timeline.Timeline.X) and a byte figure.
type Marker struct {
	Index int
	X     int64
	Bytes int64
	Label string
}

// Zoom is the part of the timeline shown first: X0 to X1, in the
// unit of Marker.X. The slider still reaches the whole trace.
type Zoom struct {
	X0, X1 int64
	// Note says what the view leaves out and how to see it.
	Note string
}

// Range is a named range of the timeline (a record_function range,
// a step): X0 to X1 in the unit of Marker.X, and the entries I0 to I1
// it covers.
type Range struct {
	Name   string
	X0, X1 int64
	I0, I1 int
}

// Segment is one segment drawn as a bar of its blocks.
type Segment struct {
	Addr       string
	Size       int64
	Stream     uint64
	Pool       string
	Large      bool
	Expandable bool
	Blocks     []Block
}

// Block states as the report draws them.
const (
	BlockAllocated   = "allocated"
	BlockPendingFree = "pending free"
	BlockFree        = "free"
)

// Block is one block of an Segment.
type Block struct {
	// Offset is the block's offset in its segment, in bytes.
	Offset, Size, Requested int64
	// State is one of HTMLBlockAllocated, HTMLBlockPendingFree,
	// HTMLBlockFree.
	State string
	// Stack indexes Report.Stacks, -1 for none.
	Stack int
}

// Leak is one row of the leak table.
type Leak struct {
	// Label names the allocation site, as Group.Label.
	Label string
	Bytes int64
	Count int
	// Stack indexes Report.Stacks, -1 for none.
	Stack int
	// Detail is the verdict on the group's history (free text).
	Detail string
	// Suspicious is true when the verdict says the group grew and was not
	// given back.
	Suspicious bool
	// Score is the leak score in bytes (leaks.LeakGroup.Score).
	Score float64
	// Growth is the group's live bytes at the end of each step (or
	// slice), for the sparkline; with GrowthStep0, Growth[0] is step 0,
	// what came before the first step.
	Growth      []int64
	GrowthStep0 bool
}

//go:embed assets/report.html.tmpl assets/report.js assets/report.css
var htmlAssets embed.FS

// Write writes r as one self-contained HTML page: the ECharts bundle,
// the script and the styles are inlined and the page makes no request.
// The output is a function of r alone.
func Write(w io.Writer, r *Report) error {
	page, err := htmlPage(r)
	if err != nil {
		return err
	}
	tmpl, err := template.New("report.html.tmpl").Funcs(template.FuncMap{
		"bytes": units.Bytes,
		"num":   func(n int) string { return units.Int(n) },
		"score": func(f float64) int64 { return int64(f) },
		"spark": htmlSparkline,
		"levelPoints": func(tl *timeline.Timeline) int {
			n := 0
			for _, lv := range tl.Levels {
				n += len(lv.Index)
			}
			return n
		},
		"finestBucket": func(tl *timeline.Timeline) int {
			if len(tl.Levels) == 0 {
				return 1
			}
			return max(1, (tl.Entries+tl.Levels[len(tl.Levels)-1].Buckets-1)/tl.Levels[len(tl.Levels)-1].Buckets)
		},
		"stack": func(i int) []string {
			if i < 0 || i >= len(r.Stacks) {
				return nil
			}
			return r.Stacks[i]
		},
	}).ParseFS(htmlAssets, "assets/report.html.tmpl")
	if err != nil {
		return fmt.Errorf("parsing report template: %w", err)
	}
	// The bundle and the data islands, most of the page (megabytes on a
	// long trace), go straight to w: the template writes a marker in their
	// place (with NULs, which html/template writes for no other value: it
	// replaces theirs), where text/template would copy each through fmt
	// into a buffer of the whole page.
	parts := []*template.JS{&page.ECharts, &page.Data, &page.Script, &page.Detail}
	big := make([]string, len(parts))
	for k, p := range parts {
		big[k], *p = string(*p), template.JS(htmlPartMarker(k))
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, page); err != nil {
		return fmt.Errorf("rendering report: %w", err)
	}
	out := buf.Bytes()
	for k, s := range big {
		m := []byte(htmlPartMarker(k))
		i := bytes.Index(out, m)
		if i < 0 {
			return fmt.Errorf("rendering report: the template has no place for part %d", k)
		}
		if _, err := w.Write(out[:i]); err != nil {
			return err
		}
		if _, err := io.WriteString(w, s); err != nil {
			return err
		}
		out = out[i+len(m):]
	}
	_, err = w.Write(out)
	return err
}

// htmlPartMarker marks where Write puts part k of the page (the bundle,
// the data island, the script, the detail island, in the template's
// order).
func htmlPartMarker(k int) string { return fmt.Sprintf("\x00snapview-part-%d\x00", k) }

// htmlPageData is what the page template sees.
type htmlPageData struct {
	*Report
	Sections []htmlSection
	ECharts  template.JS
	Script   template.JS
	CSS      template.CSS
	Data     template.JS
	// Detail is the second data island (htmlDetail), read after the
	// first paint.
	Detail template.JS
}

// htmlSection is one device with its chart containers.
type htmlSection struct {
	*DeviceView
	ID               string
	TimelineElement  template.HTML
	SegmentsElement  template.HTML
	MonitorElement   template.HTML
	SegmentsShown    int
	AnnotationsShown int
	GroupRows        []htmlGroupRow
	// TopGroups counts the groups drawn on their own; HasOther says
	// whether the rest are drawn as "other".
	TopGroups int
	HasOther  bool
}

// htmlGroupRow is one row of the stack group table.
type htmlGroupRow struct {
	Color, Label        string
	PeakBytes, MaxBytes int64
	Count, Stacks       int
	Stack               int
	Other               bool
}

// htmlData is the JSON data island the script reads: the chart options
// and what the tooltips need.
type htmlData struct {
	Stacks  [][]string       `json:"stacks"`
	Devices []htmlDataDevice `json:"devices"`
}

type htmlDataDevice struct {
	Device int `json:"device"`
	// Section is the id of the device's section on the page ("dev0", or
	// the file's key in a report of several files): the prefix of its
	// elements' ids.
	Section string `json:"section"`
	// XIsTime is true when the trace has times (the axis can switch);
	// XByIndex when the chart opens on the entry index.
	XIsTime  bool `json:"xIsTime"`
	XByIndex bool `json:"xByIndex"`
	// RequestedUnknown: show "?" for requested bytes (Device).
	RequestedUnknown bool `json:"requestedUnknown,omitempty"`
	// YInterval is the timeline's y tick interval in bytes, a power of
	// two (0: ECharts chooses).
	YInterval   int64           `json:"yInterval"`
	Timeline    *htmlDataChart  `json:"timeline"`
	Groups      []htmlDataGroup `json:"groups"`
	Segments    *htmlDataChart  `json:"segments"`
	SegmentInfo []htmlDataSeg   `json:"segmentInfo"`
	// Monitor is the monitoring chart; Overlay the nvidia-smi samples
	// drawn on the timeline ([x, bytes]); Steps name the stats log's
	// points.
	Monitor *htmlDataChart `json:"monitor,omitempty"`
	Overlay [][2]float64   `json:"overlay,omitempty"`
	Steps   []string       `json:"steps,omitempty"`
	// SegmentsAt titles SegmentInfo, SegmentsTotal counts the segments
	// at that moment.
	SegmentsAt    string `json:"segmentsAt"`
	SegmentsTotal int    `json:"segmentsTotal"`
	// Markers are the timeline's markers; Inspect what clicking it
	// shows.
	Markers *htmlMarkers     `json:"markers"`
	Inspect *htmlDataInspect `json:"inspect"`
	// Detail is true when the #snapview-detail island has the device's
	// multi-resolution index and single allocations (detail.go).
	Detail bool `json:"detail,omitempty"`
}

// htmlDataInspect is Inspect for the page; States' segments are
// written as htmlDataSeg.
type htmlDataInspect struct {
	Live     bool                   `json:"live"`
	Allocs   [][7]int64             `json:"allocs"`
	Segments [][6]int64             `json:"segments"`
	States   []htmlDataInspectState `json:"states"`
	// MaxSegments is the most segments the segment map draws.
	MaxSegments int `json:"maxSegments"`
}

type htmlDataInspectState struct {
	Index    int           `json:"index"`
	Segments []htmlDataSeg `json:"segments"`
}

// htmlDataSegs converts segments for the page.
func htmlDataSegs(segs []Segment) []htmlDataSeg {
	out := make([]htmlDataSeg, 0, len(segs))
	for _, sg := range segs {
		ds := htmlDataSeg{Addr: sg.Addr, Size: sg.Size, Stream: sg.Stream, Pool: sg.Pool,
			Blocks: make([][4]int64, len(sg.Blocks)), States: make([]string, len(sg.Blocks))}
		for j, b := range sg.Blocks {
			ds.Blocks[j] = [4]int64{b.Offset, b.Size, b.Requested, int64(b.Stack)}
			ds.States[j] = b.State
		}
		out = append(out, ds)
	}
	return out
}

type htmlDataChart struct {
	ID     string          `json:"id"`
	Option json.RawMessage `json:"option"`
}

type htmlDataGroup struct {
	Label string `json:"label"`
	Stack int    `json:"stack"`
}

// htmlDataSeg describes one segment for the segment chart's tooltip.
type htmlDataSeg struct {
	Addr   string `json:"addr"`
	Size   int64  `json:"size"`
	Stream uint64 `json:"stream"`
	Pool   string `json:"pool"`
	// Blocks are [offset, size, requested, stack] of each block.
	Blocks [][4]int64 `json:"blocks"`
	States []string   `json:"states"`
}

func htmlPage(r *Report) (*htmlPageData, error) {
	script, err := htmlAssets.ReadFile("assets/report.js")
	if err != nil {
		return nil, err
	}
	css, err := htmlAssets.ReadFile("assets/report.css")
	if err != nil {
		return nil, err
	}
	if err := htmlCheckInline("report.js", script); err != nil {
		return nil, err
	}
	if err := htmlCheckInline("echarts.min.js", []byte(echarts.JSSource)); err != nil {
		return nil, err
	}
	page := &htmlPageData{
		Report:  r,
		ECharts: template.JS(echarts.JSSource),
		Script:  template.JS(script),
		CSS:     template.CSS(css),
	}
	data := htmlData{Stacks: r.Stacks, Devices: []htmlDataDevice{}}
	if data.Stacks == nil {
		data.Stacks = [][]string{}
	}
	for i := range r.Devices {
		d := &r.Devices[i]
		sec := htmlSection{DeviceView: d, ID: fmt.Sprintf("dev%d", d.Device)}
		if d.Key != "" {
			sec.ID = d.Key
		}
		dd := htmlDataDevice{Device: d.Device, Section: sec.ID, Groups: []htmlDataGroup{}, SegmentInfo: []htmlDataSeg{},
			RequestedUnknown: d.RequestedUnknown}
		if d.Timeline != nil && len(d.Timeline.Index) > 0 {
			el, opt, err := htmlTimelineChart(d)
			if err != nil {
				return nil, fmt.Errorf("device %d timeline: %w", d.Device, err)
			}
			sec.TimelineElement = el
			sec.AnnotationsShown = len(d.Annotations)
			dd.XIsTime = d.Timeline.XIsTime
			dd.XByIndex = d.XByIndex || !d.Timeline.XIsTime
			dd.Markers = htmlTimelineMarkers(d)
			dd.YInterval, _ = htmlYTicks(d.Timeline)
			if d.YMax > 0 {
				dd.YInterval, _ = htmlTicks(d.YMax)
			}
			dd.Timeline = &htmlDataChart{ID: htmlDeviceChartID("timeline", d), Option: opt}
			dd.Detail = htmlHasDetail(d)
			for i, g := range d.Groups {
				dd.Groups = append(dd.Groups, htmlDataGroup{Label: g.Label, Stack: g.Stack})
				tg := &d.Timeline.Groups[i]
				color := htmlPalette[i%len(htmlPalette)]
				if g.Other {
					color = htmlColorOther
					sec.HasOther = true
				} else {
					sec.TopGroups++
				}
				sec.GroupRows = append(sec.GroupRows, htmlGroupRow{
					Color: color, Label: g.Label, PeakBytes: tg.PeakBytes, MaxBytes: tg.MaxBytes,
					Count: tg.Count, Stacks: tg.Stacks, Stack: g.Stack, Other: g.Other,
				})
			}
		}
		if len(d.Segments) > 0 || d.Inspect != nil {
			el, opt, err := htmlSegmentsChart(d)
			if err != nil {
				return nil, fmt.Errorf("device %d segments: %w", d.Device, err)
			}
			sec.SegmentsElement = el
			sec.SegmentsShown = len(d.Segments)
			dd.Segments = &htmlDataChart{ID: htmlDeviceChartID("segments", d), Option: opt}
			dd.SegmentInfo = htmlDataSegs(d.Segments)
			dd.SegmentsAt, dd.SegmentsTotal = d.SegmentsAt, d.SegmentsTotal
		}
		if in := d.Inspect; in != nil {
			di := &htmlDataInspect{Live: in.Live, Allocs: in.Allocs, Segments: in.Segments, States: []htmlDataInspectState{}, MaxSegments: htmlMaxMapSegments}
			for _, st := range in.States {
				di.States = append(di.States, htmlDataInspectState{Index: st.Index, Segments: htmlDataSegs(st.Segments)})
			}
			dd.Inspect = di
		}
		if d.Monitor != nil {
			el, opt, err := htmlMonitorChart(d)
			if err != nil {
				return nil, fmt.Errorf("device %d monitoring chart: %w", d.Device, err)
			}
			sec.MonitorElement = el
			dd.Monitor = &htmlDataChart{ID: htmlDeviceChartID("monitor", d), Option: opt}
			dd.Overlay, dd.Steps = d.Monitor.Overlay, d.Monitor.StepNames
		}
		page.Sections = append(page.Sections, sec)
		data.Devices = append(data.Devices, dd)
	}
	island, err := json.Marshal(data) // escapes <, > and & everywhere, RawMessages included
	if err != nil {
		return nil, fmt.Errorf("encoding report data: %w", err)
	}
	if err := htmlCheckInline("report data", island); err != nil {
		return nil, err
	}
	page.Data = template.JS(island)
	detail, err := htmlDetailJSON(page.Sections)
	if err != nil {
		return nil, fmt.Errorf("encoding report data: %w", err)
	}
	if err := htmlCheckInline("report detail", detail); err != nil {
		return nil, err
	}
	page.Detail = template.JS(detail)
	return page, nil
}

// htmlSparkline draws a leak group's live bytes at the end of each step
// as a small inline SVG bar chart (the text views' sparkline, drawn);
// step0 says the first bar is step 0, before the first step.
func htmlSparkline(growth []int64, step0 bool) template.HTML {
	if len(growth) == 0 {
		return ""
	}
	const w, h = 120, 18
	var hi int64
	for _, v := range growth {
		hi = max(hi, v)
	}
	what := fmt.Sprintf("each of %d steps", len(growth))
	if step0 {
		what = fmt.Sprintf("step 0 (before the first step) and of each of %d steps", len(growth)-1)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg class="spark" width="%d" height="%d" viewBox="0 0 %d %d"><title>live bytes at the end of %s, up to %s</title>`,
		w, h, w, h, what, template.HTMLEscapeString(units.Bytes(hi)))
	bw := float64(w) / float64(len(growth))
	for i, v := range growth {
		if v <= 0 || hi <= 0 {
			continue
		}
		bh := max(1, float64(h)*float64(v)/float64(hi))
		fmt.Fprintf(&b, `<rect x="%.2f" y="%.2f" width="%.2f" height="%.2f"/>`, float64(i)*bw, float64(h)-bh, max(bw-0.5, 0.5), bh)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// htmlMaxMapSegments is the most segments the page's segment map draws
// for a clicked moment (the largest).
const htmlMaxMapSegments = 200

// htmlCheckInline makes sure a text can sit inside a <script> element.
func htmlCheckInline(name string, b []byte) error {
	// Each pattern starts with '<', which only '<' lowercases to, and
	// bytes.ToLower maps rune by rune: so lowering the few runes after
	// each '<' finds what lowering all of b would (b is megabytes of
	// script and data; the data island has no '<' at all).
	bad := [...]string{"</script", "<!--", "<script"}
	var found [len(bad)]bool
	for i := 0; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 {
			break
		}
		i += j
		w := bytes.ToLower(b[i:min(len(b), i+4*len("</script"))])
		for k := range bad {
			found[k] = found[k] || bytes.HasPrefix(w, []byte(bad[k]))
		}
	}
	for k := range bad {
		if found[k] {
			return fmt.Errorf("%s holds %q and cannot be inlined", name, bad[k])
		}
	}
	return nil
}

// htmlChartID is the fixed ECharts container id of a chart.
func htmlChartID(kind string, device int) string {
	return fmt.Sprintf("%s_d%d", kind, device)
}

// htmlDeviceChartID is htmlChartID, or kind_KEY for a device of a report
// of several files.
func htmlDeviceChartID(kind string, d *DeviceView) string {
	if d.Key != "" {
		return kind + "_" + d.Key
	}
	return htmlChartID(kind, d.Device)
}

// errHTMLPanic wraps a panic raised while rendering a chart.
var errHTMLPanic = errors.New("go-echarts panicked")
