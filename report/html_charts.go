package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/go-echarts/go-echarts/v2/render"

	"github.com/snapview/snapview/analyze"
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

// Timeline dataset columns: x, reserved, active, allocated, then one per
// group.
const (
	htmlColX = iota
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

func htmlTimelineChart(d *HTMLDevice) (template.HTML, json.RawMessage, error) {
	tl := d.Timeline
	if len(d.Groups) != len(tl.Groups) {
		return "", nil, fmt.Errorf("%d group labels for %d groups", len(d.Groups), len(tl.Groups))
	}
	id := htmlChartID("timeline", d.Device)
	xName := "trace entry"
	if tl.XIsTime {
		xName = "time (s)"
	}
	var zoomStart, zoomEnd float32 = 0, 100
	if z := d.Zoom; z != nil && len(tl.X) > 1 && tl.X[len(tl.X)-1] > tl.X[0] {
		x0, span := float64(tl.X[0]), float64(tl.X[len(tl.X)-1]-tl.X[0])
		zoomStart = float32(max(0, min(100, 100*(float64(z.X0)-x0)/span)))
		zoomEnd = float32(max(0, min(100, 100*(float64(z.X1)-x0)/span)))
	}
	yAxis := opts.YAxis{Type: "value"}
	if _, top := htmlYTicks(tl); top > 0 {
		yAxis.Min, yAxis.Max = 0, top
	}
	line := charts.NewLine()
	line.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "100%", Height: "520px"}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis", Enterable: opts.Bool(false)}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Type: "scroll", Top: "0"}),
		charts.WithGridOpts(opts.Grid{Left: "70", Right: "40", Top: "50", Bottom: "90"}),
		charts.WithDataZoomOpts(
			opts.DataZoom{Type: "inside", XAxisIndex: []int{0}, FilterMode: "none", Start: zoomStart, End: zoomEnd},
			opts.DataZoom{Type: "slider", XAxisIndex: []int{0}, FilterMode: "none", Start: zoomStart, End: zoomEnd},
		),
		charts.WithXAxisOpts(opts.XAxis{Type: "time", Name: xName, NameLocation: "middle", NameGap: 28, Min: "dataMin", Max: "dataMax"}),
		charts.WithYAxisOpts(yAxis),
	)

	rows := make([][]float64, len(tl.Index))
	for p := range tl.Index {
		row := make([]float64, htmlColGroups+len(tl.Groups))
		row[htmlColX] = htmlX(tl.X[p], tl.XIsTime)
		row[htmlColReserved] = float64(tl.Reserved[p])
		row[htmlColActive] = float64(tl.Active[p])
		row[htmlColAllocated] = float64(tl.Allocated[p])
		for g := range tl.Groups {
			row[htmlColGroups+g] = float64(tl.Groups[g].Bytes[p])
		}
		rows[p] = row
	}
	line.AddDataset(opts.Dataset{Source: htmlRowsMark})

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

	// The reserved line carries the markers: peak, OOMs and ranges.
	reserved := []charts.SeriesOpts{
		charts.WithEncodeOpts(opts.Encode{X: htmlColX, Y: htmlColReserved}), step,
		charts.WithLineStyleOpts(opts.LineStyle{Width: 1.5, Type: "dashed", Color: htmlColorReserved}),
		charts.WithItemStyleOpts(opts.ItemStyle{Color: htmlColorReserved}),
	}
	var vlines []opts.MarkLineNameXAxisItem
	if d.Peak != nil {
		x := htmlX(d.Peak.X, tl.XIsTime)
		reserved = append(reserved, charts.WithMarkPointNameCoordItemOpts(opts.MarkPointNameCoordItem{
			Name:       htmlSafe("peak: " + d.Peak.Label),
			Coordinate: []any{x, d.Peak.Bytes},
			Value:      "peak",
			Symbol:     "pin",
			SymbolSize: 44,
			ItemStyle:  &opts.ItemStyle{Color: htmlColorPeak},
			Label:      &opts.Label{Show: opts.Bool(true), FontSize: 10, Color: "#fff"},
		}))
	}
	for _, o := range d.OOMs {
		// The full label is listed under the chart; the line says "OOM".
		vlines = append(vlines, opts.MarkLineNameXAxisItem{Name: "OOM " + FormatBytes(o.Bytes), XAxis: htmlX(o.X, tl.XIsTime)})
	}
	if len(vlines) > 0 {
		reserved = append(reserved,
			charts.WithMarkLineNameXAxisItemOpts(vlines...),
			charts.WithMarkLineStyleOpts(opts.MarkLineStyle{
				Symbol:    []string{"none", "none"},
				Label:     &opts.Label{Show: opts.Bool(true), Position: "end", Formatter: "{b}", FontSize: 11, Color: htmlColorOOM},
				LineStyle: &opts.LineStyle{Color: htmlColorOOM, Width: 1.5, Type: "solid"},
			}),
		)
	}
	if len(d.Annotations) > 0 {
		areas := make([][]opts.MarkAreaData, len(d.Annotations))
		for i, a := range d.Annotations {
			areas[i] = []opts.MarkAreaData{
				{Name: htmlSafe(a.Name), XAxis: htmlX(a.X0, tl.XIsTime)},
				{XAxis: htmlX(a.X1, tl.XIsTime)},
			}
		}
		reserved = append(reserved,
			charts.WithMarkAreaData(areas...),
			charts.WithMarkAreaStyleOpts(opts.MarkAreaStyle{
				Label:     &opts.Label{Show: opts.Bool(false), Position: "insideTop", FontSize: 10, Color: "#444"},
				ItemStyle: &opts.ItemStyle{Color: "rgba(120,120,200,0.07)", BorderColor: "rgba(120,120,200,0.35)", BorderWidth: 0.5},
				Emphasis:  &opts.Emphasis{Label: &opts.Label{Show: opts.Bool(true)}},
			}),
		)
	}
	line.AddSeries("reserved", nil, reserved...)
	return htmlRenderChartRows(line, rows)
}

// htmlYTicks returns the y tick interval of a timeline, the smallest
// power of two that divides its highest bytes into at most eight steps
// (ticks at 128 MiB, 256 MiB, ... rather than 190.7 MiB, 381.5 MiB), and
// the axis maximum, the first tick at or above the highest bytes; zeros
// when the timeline has no bytes.
func htmlYTicks(tl *analyze.Timeline) (interval, top int64) {
	var hi int64
	for _, col := range [][]int64{tl.Reserved, tl.Active, tl.Allocated} {
		for _, v := range col {
			hi = max(hi, v)
		}
	}
	if hi <= 0 {
		return 0, 0
	}
	interval = 1
	for interval*8 < hi {
		interval *= 2
	}
	return interval, (hi + interval - 1) / interval * interval
}

// Segment chart dataset columns.
const (
	htmlSegColRow = iota
	htmlSegColStart
	htmlSegColEnd
	htmlSegColState
	htmlSegColBlock
)

// htmlStateCode maps a block state to the number the block renderer
// colours.
func htmlStateCode(state string) int {
	switch state {
	case HTMLBlockAllocated:
		return 0
	case HTMLBlockPendingFree:
		return 1
	}
	return 2
}

func htmlSegmentsChart(d *HTMLDevice) (template.HTML, json.RawMessage, error) {
	id := htmlChartID("segments", d.Device)
	height := 70 + 22*len(d.Segments)
	c := charts.NewCustom()
	names := make([]string, len(d.Segments))
	var rows [][]float64
	for i, sg := range d.Segments {
		names[i] = fmt.Sprintf("%s %s", sg.Addr, FormatBytes(sg.Size))
		for j, b := range sg.Blocks {
			if sg.Size <= 0 {
				continue
			}
			rows = append(rows, []float64{
				float64(i),
				float64(b.Offset) / float64(sg.Size),
				float64(b.Offset+b.Size) / float64(sg.Size),
				float64(htmlStateCode(b.State)),
				float64(j),
			})
		}
	}
	if rows == nil {
		rows = [][]float64{}
	}
	c.SetGlobalOptions(
		charts.WithInitializationOpts(opts.Initialization{ChartID: id, Width: "100%", Height: fmt.Sprintf("%dpx", height)}),
		charts.WithAnimation(false),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(false)}),
		charts.WithGridOpts(opts.Grid{Left: "10", Right: "30", Top: "10", Bottom: "40", ContainLabel: opts.Bool(true)}),
		charts.WithXAxisOpts(opts.XAxis{Type: "value", Min: 0, Max: 1, Name: "offset in segment", NameLocation: "middle", NameGap: 25}),
		charts.WithYAxisOpts(opts.YAxis{Type: "category", Data: names, Inverse: opts.Bool(true)}),
	)
	c.AddDataset(opts.Dataset{Source: htmlRowsMark})
	c.AddSeries("blocks", nil,
		charts.WithEncodeOpts(opts.Encode{X: []int{htmlSegColStart, htmlSegColEnd}, Y: htmlSegColRow}),
	)
	return htmlRenderChartRows(c, rows)
}

// htmlRowsMark stands for a chart's dataset rows while go-echarts renders
// the option: RenderSnippet writes the option twice through html/template,
// a regexp and html.UnescapeString, which for the rows of a long timeline
// (numbers only, which none of the three changes) took longer than the
// rest of the report. htmlRenderChartRows puts the rows, as encoding/json
// writes them, where the mark is.
const htmlRowsMark = "snapview:dataset-rows"

// htmlRenderChartRows is htmlRenderChart for a chart whose dataset source
// is htmlRowsMark, then rows.
func htmlRenderChartRows(c interface{ RenderSnippet() render.ChartSnippet }, rows any) (template.HTML, json.RawMessage, error) {
	el, opt, err := htmlRenderChart(c)
	if err != nil {
		return el, opt, err
	}
	// Outside a JSON string a quote is never escaped, so the mark with its
	// key is found only where the dataset is.
	mark := []byte(`"source":"` + htmlRowsMark + `"`)
	i := bytes.Index(opt, mark)
	if i < 0 {
		return "", nil, fmt.Errorf("go-echarts option without its dataset (%d bytes)", len(opt))
	}
	data, err := json.Marshal(rows)
	if err != nil {
		return "", nil, err
	}
	at := i + len(mark) - len(`"`+htmlRowsMark+`"`)
	out := make([]byte, 0, len(opt)+len(data))
	out = append(out, opt[:at]...)
	out = append(out, data...)
	out = append(out, opt[at+len(`"`+htmlRowsMark+`"`):]...)
	return el, out, nil
}

// htmlRenderChart returns the chart's container element and its option
// JSON. go-echarts panics on template errors; the panic becomes an error.
func htmlRenderChart(c interface{ RenderSnippet() render.ChartSnippet }) (el template.HTML, opt json.RawMessage, err error) {
	defer func() {
		if p := recover(); p != nil {
			el, opt, err = "", nil, fmt.Errorf("%w: %v", errHTMLPanic, p)
		}
	}()
	snip := c.RenderSnippet()
	raw := bytes.TrimSpace([]byte(snip.Option))
	if !json.Valid(raw) {
		return "", nil, fmt.Errorf("go-echarts wrote an invalid option (%d bytes)", len(raw))
	}
	// Element holds only the fixed chart id and sizes; it is checked so
	// that nothing else can slip in.
	if err := htmlCheckInline("chart element", []byte(snip.Element)); err != nil {
		return "", nil, err
	}
	return template.HTML(snip.Element), json.RawMessage(raw), nil
}

// htmlSafe prepares a string from the snapshot for a chart option. The
// option JSON is HTML-escaped as a whole when it is put in the page, so
// only two things remain: go-echarts unescapes HTML entities in the option
// it renders (so "&amp;" would turn into "&"; a zero-width joiner after
// '&' keeps it literal), and ECharts reads "{" in labels as rich-text
// markup.
func htmlSafe(s string) string {
	var b bytes.Buffer
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&\u200d")
		case '{':
			b.WriteRune('\uff5b') // fullwidth left curly bracket
		case '}':
			b.WriteRune('\uff5d')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
