package html

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/snapview/snapview/analyze/timeline"
)

// The chart options are built with go-echarts and taken from its
// RenderSnippet: the container element and the option JSON. The option
// travels in the page's JSON data island (encoding/json escapes <, > and &
// in it), and assets/report.js initialises each chart and adds the
// JavaScript parts (formatters, the block renderer), so no function and no
// user string is ever written raw into a <script>.

// htmlPalette colours the stacked groups (Tableau 10, as memory_viz).
var htmlPalette = [...]string{
	"#4e79a7", "#f28e2c", "#e15759", "#76b7b2", "#59a14f",
	"#edc949", "#af7aa1", "#ff9da7", "#9c755f", "#86bcb6",
}

const (
	htmlColorOther    = "#bab0ac"
	htmlColorReserved = "#555555"
	htmlColorActive   = "#111111"
	htmlColorPeak     = "#d62728"
	htmlColorOOM      = "#b00020"
)

// Timeline dataset columns: the x the chart opens on (see
// Device.XByIndex), the other x (the page swaps them to switch axes),
// reserved, active, allocated, then one per group.
const (
	htmlColX = iota
	htmlColX2
	htmlColReserved
	htmlColActive
	htmlColAllocated
	htmlColGroups
)

// htmlX converts a timeline x value to the chart's unit: milliseconds
// for times, the entry index otherwise.
//
// The x axis is an ECharts "time" axis either way (report.js formats its
// labels as seconds or as entry numbers): ECharts stacks the first numeric
// dimension that is not of type time or ordinal, so on a "value" x axis
// the stacked areas would add up their x values instead of their bytes.
func htmlX(x int64, isTime bool) float64 {
	if isTime {
		return float64(x) / 1e3
	}
	return float64(x)
}

// htmlTimelineLegendWidth is the width in pixels of the legend beside the
// timeline; names longer than it wrap.
const htmlTimelineLegendWidth = 250

func htmlTimelineChart(d *DeviceView) (template.HTML, json.RawMessage, error) {
	tl := d.Timeline
	if len(d.Groups) != len(tl.Groups) {
		return "", nil, fmt.Errorf("%d group labels for %d groups", len(d.Groups), len(tl.Groups))
	}
	id := htmlDeviceChartID("timeline", d)
	byIndex := d.XByIndex || !tl.XIsTime
	var zoomStart, zoomEnd float32 = 0, 100
	if z := d.Zoom; z != nil && !byIndex && len(tl.X) > 1 && tl.X[len(tl.X)-1] > tl.X[0] {
		// Percentages of the axis: from 0 to XMax when it is fixed.
		x0 := float64(tl.X[0])
		if d.XMax > 0 {
			x0 = 0
		}
		span := float64(max(tl.X[len(tl.X)-1], d.XMax)) - x0
		zoomStart = float32(max(0, min(100, 100*(float64(z.X0)-x0)/span)))
		zoomEnd = float32(max(0, min(100, 100*(float64(z.X1)-x0)/span)))
	}
	yAxis := opts.YAxis{Type: "value"}
	if _, top := htmlYTicks(tl); top > 0 {
		yAxis.Min, yAxis.Max = 0, top
	}
	if d.YMax > 0 {
		_, top := htmlTicks(d.YMax)
		yAxis.Min, yAxis.Max = 0, top
	}
	var xMin, xMax any = "dataMin", "dataMax"
	if d.XMax > 0 && !byIndex {
		xMin, xMax = 0, htmlX(d.XMax, true)
	}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "100%", Height: "520px"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", Enterable: opts.Bool(false)}),
		// Beside the chart, scrolling when it is long; report.js wraps
		// long names and puts reserved and active first.
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Orient: "vertical", Right: "8", Top: "10", Bottom: "60"}),
		charts.WithGridOpts(opts.Grid{Left: "70", Right: fmt.Sprint(htmlTimelineLegendWidth + 30), Top: "30", Bottom: "90"}),
		charts.WithDataZoomOpts(
			opts.DataZoom{Type: "inside", XAxisIndex: []int{0}, FilterMode: "none", Start: zoomStart, End: zoomEnd},
			opts.DataZoom{Type: "slider", XAxisIndex: []int{0}, FilterMode: "none", Start: zoomStart, End: zoomEnd},
		),
		charts.WithXAxisOpts(opts.XAxis{Type: "time", NameLocation: "middle", NameGap: 28, Min: xMin, Max: xMax}),
		charts.WithYAxisOpts(yAxis),
	)

	rows := make([][]float64, len(tl.Index))
	for p := range tl.Index {
		row := make([]float64, htmlColGroups+len(tl.Groups))
		xt, xi := htmlX(tl.X[p], tl.XIsTime), float64(tl.Index[p])
		if byIndex {
			row[htmlColX], row[htmlColX2] = xi, xt
		} else {
			row[htmlColX], row[htmlColX2] = xt, xi
		}
		row[htmlColReserved] = float64(tl.Reserved[p])
		row[htmlColActive] = float64(tl.Active[p])
		row[htmlColAllocated] = float64(tl.Allocated[p])
		for g := range tl.Groups {
			row[htmlColGroups+g] = float64(tl.Groups[g].Bytes[p])
		}
		rows[p] = row
	}
	line.AddDataset(opts.Dataset{Source: rows})

	step := charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false)})
	for g := range tl.Groups {
		color := htmlPalette[g%len(htmlPalette)]
		if d.Groups[g].Other {
			color = htmlColorOther
		}
		line.AddSeries(htmlSafe(d.Groups[g].Label), nil,
			charts.WithEncodeOpts(opts.Encode{X: htmlColX, Y: htmlColGroups + g}),
			charts.WithLineChartOpts(opts.LineChart{Step: "end", ShowSymbol: opts.Bool(false), Stack: "live"}),
			charts.WithLineStyleOpts(opts.LineStyle{Opacity: opts.Float(0)}),
			charts.WithItemStyleOpts(opts.ItemStyle{Color: color}),
			charts.WithAreaStyleOpts(opts.AreaStyle{Opacity: opts.Float(0.85), Color: color}),
		)
	}
	line.AddSeries("active", nil,
		charts.WithEncodeOpts(opts.Encode{X: htmlColX, Y: htmlColActive}), step,
		charts.WithLineStyleOpts(opts.LineStyle{Width: 1, Color: htmlColorActive}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: htmlColorActive}),
	)
	// The reserved line carries the markers (peak, OOMs, steps and
	// record_function ranges); report.js draws them for the axis shown.
	line.AddSeries("reserved", nil,
		charts.WithEncodeOpts(opts.Encode{X: htmlColX, Y: htmlColReserved}), step,
		charts.WithLineStyleOpts(opts.LineStyle{Width: 1.5, Type: "dashed", Color: htmlColorReserved}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: htmlColorReserved}),
	)
	return htmlRenderChart(line, id, "520px")
}

// htmlMarkers are the timeline's markers in both units, for report.js.
type htmlMarkers struct {
	// Peak is [entry, x, bytes]; nil without a trace.
	Peak *[3]int64 `json:"peak"`
	// PeakLabel reads after "peak: ".
	PeakLabel string `json:"peakLabel"`
	// OOMs are [entry, x, requested bytes] of each oom entry.
	OOMs [][3]int64 `json:"ooms"`
	// Steps and Ranges are [entry0, entry1, x0, x1]; RangeNames name
	// the ranges.
	Steps      [][4]int64 `json:"steps"`
	Ranges     [][4]int64 `json:"ranges"`
	RangeNames []string   `json:"rangeNames"`
}

func htmlTimelineMarkers(d *DeviceView) *htmlMarkers {
	m := &htmlMarkers{OOMs: [][3]int64{}, Steps: [][4]int64{}, Ranges: [][4]int64{}, RangeNames: []string{}}
	if p := d.Peak; p != nil {
		m.Peak = &[3]int64{int64(p.Index), p.X, p.Bytes}
		m.PeakLabel = p.Label
	}
	for _, o := range d.OOMs {
		m.OOMs = append(m.OOMs, [3]int64{int64(o.Index), o.X, o.Bytes})
	}
	for _, st := range d.Steps {
		m.Steps = append(m.Steps, [4]int64{int64(st.I0), int64(st.I1), st.X0, st.X1})
	}
	for _, a := range d.Annotations {
		m.Ranges = append(m.Ranges, [4]int64{int64(a.I0), int64(a.I1), a.X0, a.X1})
		m.RangeNames = append(m.RangeNames, a.Name)
	}
	return m
}

// htmlYTicks returns the y tick interval of a timeline, the smallest
// power of two that divides its highest bytes into at most eight steps
// (ticks at 128 MiB, 256 MiB, ... rather than 190.7 MiB, 381.5 MiB), and
// the axis maximum, the first tick at or above the highest bytes; zeros
// when the timeline has no bytes.
func htmlYTicks(tl *timeline.Timeline) (interval, top int64) {
	var hi int64
	for _, col := range [][]int64{tl.Reserved, tl.Active, tl.Allocated} {
		for _, v := range col {
			hi = max(hi, v)
		}
	}
	return htmlTicks(hi)
}

// htmlTicks is htmlYTicks for an axis whose highest bytes are hi.
func htmlTicks(hi int64) (interval, top int64) {
	if hi <= 0 {
		return 0, 0
	}
	// hi/8 and the rounding up below cannot overflow, as interval*8 and
	// hi+interval-1 did for a figure near 2^63 (the loop never ended).
	interval = 1
	for interval < (hi+7)/8 && interval < math.MaxInt64/2 {
		interval *= 2
	}
	top = hi / interval * interval
	if top < hi && top <= math.MaxInt64-interval {
		top += interval
	}
	return interval, max(top, hi)
}

// htmlSegmentsChart returns the segment map's container and option: one
// row per segment, its length proportional to the segment's size (the
// largest spans the width), its blocks coloured by state and allocation
// stack. report.js fills the rows from the state shown (the one at the
// peak first, then the one clicked on the timeline) and draws the blocks.
func htmlSegmentsChart(d *DeviceView) (template.HTML, json.RawMessage, error) {
	id := htmlDeviceChartID("segments", d)
	height := fmt.Sprintf("%dpx", htmlSegmentsHeight(len(d.Segments)))
	c := charts.NewCustom()
	c.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "100%", Height: height}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithGridOpts(opts.Grid{Left: "10", Right: "30", Top: "10", Bottom: "40", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Min: 0, Name: "bytes from the segment's start", NameLocation: "middle", NameGap: 25}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: []string{}, Inverse: opts.Bool(true)}),
	)
	c.AddDataset(opts.Dataset{Source: [][]float64{}})
	c.AddSeries("blocks", nil,
		charts.WithEncodeOpts(opts.Encode{X: []int{1, 2}, Y: 0}),
	)
	return htmlRenderChart(c, id, height)
}

// htmlSegmentsHeight is the segment map's height in pixels for rows
// segments (report.js uses the same rule when the state changes).
func htmlSegmentsHeight(rows int) int {
	return 70 + 22*min(max(rows, 1), 60)
}

// htmlRenderChart returns the chart's container element and its option
// JSON: go-echarts' option as json.Marshal writes it (not RenderSnippet,
// which runs a regular expression and an HTML unescape over the whole
// option: 0.2 s on a long timeline). go-echarts panics on bad options;
// the panic becomes an error.
func htmlRenderChart(c interface {
	Validate()
	JSON() map[string]any
}, id, height string) (el template.HTML, opt json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			el, opt, err = "", nil, fmt.Errorf("%w: %v", errHTMLPanic, p)
		}
	}()
	c.Validate()
	raw, err := json.Marshal(c.JSON())
	if err != nil {
		return "", nil, fmt.Errorf("encoding the chart option: %w", err)
	}
	// The element holds only the fixed chart id and its height.
	el = template.HTML(fmt.Sprintf(`<div class="chart" id="%s" style="width:100%%;height:%s"></div>`,
		template.HTMLEscapeString(id), template.HTMLEscapeString(height)))
	return el, raw, nil
}

// htmlSafe prepares a string from the snapshot for a chart option. The
// option JSON is HTML-escaped as a whole when it is put in the page, so
// one thing remains: ECharts (zrender's parseRichText) reads
// "{style|text}" in labels as rich-text markup. A zero-width space after
// each "{" breaks that pattern and draws nothing, so that C++ names such
// as "at::{anon}::structured_log_softmax" read as they are. (Fullwidth
// brackets, used before, drew as boxes where no font has them.)
func htmlSafe(s string) string {
	return strings.ReplaceAll(s, "{", "{"+htmlZWSP)
}

// htmlZWSP is U+200B ZERO WIDTH SPACE.
const htmlZWSP = "\u200b"
