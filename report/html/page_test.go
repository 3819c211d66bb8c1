package html

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/timeline"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
	"github.com/snapview/snapview/third_party/echarts"
)

// hostile is a string from a snapshot that must not break the page: frame
// and file names are arbitrary text.
const hostile = `</script><script>alert("x")</script> <!-- 'q' &amp; {a|b} <module>`

// syntheticHTMLReport is a small report with two devices, every kind of
// marker and hostile strings everywhere the snapshot reaches.
func syntheticHTMLReport() *Report {
	tl := timeline.StackTimeline(timeline.StackTimelineInput{
		TimeUS:    []int64{1_000_000, 1_000_010, 1_500_000, 2_000_000, 2_250_000},
		Allocated: []int64{1024, 3072, 3584, 512, 512},
		Active:    []int64{1024, 3072, 3584, 1024, 512},
		Reserved:  []int64{2 << 20, 2 << 20, 2 << 20, 2 << 20, 2 << 20},
		Ranges: []timeline.LiveRange{
			{Start: 0, End: 3, Bytes: 1024, Stack: 1},
			{Start: 1, End: 3, Bytes: 2048, Stack: 2},
			{Start: 2, End: 5, Bytes: 512, Stack: 3},
		},
		Peak: 2,
		Keep: []int{4},
	}, timeline.StackTimelineOptions{Groups: 2, Buckets: 100})
	return &Report{
		Title:    "runs/" + hostile + ".pickle",
		Info:     "File\n  path: " + hostile + "\n",
		Warnings: []string{"unknown key " + hostile},
		Stacks: [][]string{
			{"/x/" + hostile + ".py:12 " + hostile, "/x/train.py:40 main"},
			{"torch/nn/functional.py:835 _max_pool2d", "/x/train.py:41 <module>"},
		},
		Devices: []DeviceView{
			{
				Device:   0,
				Notes:    []string{"The trace covers the run."},
				Timeline: tl,
				Groups: []Group{
					{Label: hostile, Stack: 0},
					{Label: "train.py:41 <module> · _max_pool2d", Stack: 1},
					{Label: "other (1 stack)", Stack: -1, Other: true},
				},
				Peak: &Marker{Index: 2, X: 500_000, Bytes: 3584, Label: "3.5 KiB allocated at 0.500 s"},
				Zoom: &Zoom{X0: 250_000, X1: 1_000_000, Note: "The chart opens on the part with the activity."},
				OOMs: []Marker{{Index: 4, X: 1_250_000, Bytes: 1 << 30, Label: "OOM at entry 4: 1.0 GiB requested"}},
				Annotations: []Range{
					{Name: "## step 0 ##", X0: 0, X1: 600_000},
					{Name: hostile, X0: 100_000, X1: 400_000},
				},
				AnnotationsTotal: 3,
				Summary:          "|  PyTorch CUDA memory summary  " + hostile + " |\n",
				SegmentsAt:       "at the peak (after entry 2)",
				Segments: []Segment{{
					Addr: "0x7f0000000000", Size: 2 << 20, Pool: "(0, 0)",
					Blocks: []Block{
						{Offset: 0, Size: 1024, Requested: 1000, State: BlockAllocated, Stack: 0},
						{Offset: 1024, Size: 2048, Requested: 2048, State: BlockPendingFree, Stack: 1},
						{Offset: 3072, Size: 2<<20 - 3072, State: BlockFree, Stack: -1},
					},
				}},
				SegmentsTotal: 1,
				Leaks:         []Leak{{Label: "x.py:12 " + hostile, Bytes: 1024, Count: 1, Stack: 0, Detail: "alive at the end: " + hostile}},
				LeaksNote:     "Allocations alive at the end.",
			},
			{
				Device:     1,
				Notes:      []string{"No trace."},
				Summary:    "",
				SegmentsAt: "at dump time",
				Segments: []Segment{{
					Addr: "0x7f1000000000", Size: 20 << 20, Pool: "(1, 0)", Large: true,
					Blocks: []Block{{Offset: 0, Size: 20 << 20, Requested: 20 << 20, State: BlockAllocated, Stack: -1}},
				}},
				SegmentsTotal: 3,
			},
		},
	}
}

func writeHTMLString(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, r); err != nil {
		t.Fatalf("WriteHTML: %v", err)
	}
	return buf.String()
}

var scriptRE = regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`)

// dataIsland returns the JSON data island of a page.
func dataIsland(t *testing.T, page string) []byte {
	t.Helper()
	for _, m := range scriptRE.FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], `id="snapview-data"`) {
			return []byte(m[2])
		}
	}
	t.Fatal("no data island in the page")
	return nil
}

// checkPageStructure asserts what every report page must hold.
func checkPageStructure(t *testing.T, page string, chartIDs []string) {
	t.Helper()
	if n := strings.Count(page, echarts.JSSource); n != 1 {
		t.Errorf("the ECharts bundle appears %d times, want 1", n)
	}
	// No reference to anything outside the page. (The bundle itself
	// holds "http://www.w3.org/..." namespace strings, so no bare "http"
	// check.)
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(src|href|action|poster|data)\s*=\s*["']?\s*(https?:|//|file:)`),
		regexp.MustCompile(`(?i)<link\b`),
		regexp.MustCompile(`(?i)url\(\s*["']?\s*(https?:|//)`),
		regexp.MustCompile(`(?i)@import`),
	} {
		if loc := re.FindStringIndex(page); loc != nil {
			t.Errorf("page refers outside itself: %q", page[loc[0]:min(loc[1]+40, len(page))])
		}
	}
	if !strings.Contains(page, `Content-Security-Policy" content="default-src 'none'`) {
		t.Error("page lacks its default-src 'none' content security policy")
	}
	// Exactly four scripts (bundle, data, detail, code), each closed where
	// it should be: a "</script" inside any of them would split it.
	scripts := scriptRE.FindAllStringSubmatch(page, -1)
	if len(scripts) != 4 || strings.Count(strings.ToLower(page), "<script") != 4 || strings.Count(strings.ToLower(page), "</script") != 4 {
		t.Errorf("page has %d script elements (%d opening, %d closing tags), want 4",
			len(scripts), strings.Count(strings.ToLower(page), "<script"), strings.Count(strings.ToLower(page), "</script"))
	}
	for _, id := range chartIDs {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("chart container %q missing", id)
		}
	}
	var data htmlData
	if err := json.Unmarshal(dataIsland(t, page), &data); err != nil {
		t.Errorf("data island is not JSON: %v", err)
	}
}

func TestWriteHTMLSynthetic(t *testing.T) {
	r := syntheticHTMLReport()
	page := writeHTMLString(t, r)
	checkPageStructure(t, page, []string{"timeline_d0", "segments_d0", "segments_d1"})
	if strings.Contains(page, `id="timeline_d1"`) {
		t.Error("device 1 has no trace but got a timeline")
	}

	// Deterministic: the same report gives the same bytes.
	if again := writeHTMLString(t, syntheticHTMLReport()); again != page {
		t.Error("two renderings of the same report differ")
	}

	// The hostile strings come back intact from the data island...
	var data htmlData
	if err := json.Unmarshal(dataIsland(t, page), &data); err != nil {
		t.Fatal(err)
	}
	if got := data.Devices[0].Groups[0].Label; got != hostile {
		t.Errorf("group label from the data island = %q, want %q", got, hostile)
	}
	if got := data.Stacks[0][0]; !strings.Contains(got, hostile) {
		t.Errorf("frame from the data island = %q, want it to hold %q", got, hostile)
	}
	var opt struct {
		Series []struct {
			Name string `json:"name"`
		} `json:"series"`
	}
	if err := json.Unmarshal(data.Devices[0].Timeline.Option, &opt); err != nil {
		t.Fatal(err)
	}
	// ... and reach the chart with only braces neutralised.
	wantName := htmlSafe(hostile)
	if got := opt.Series[0].Name; got != wantName {
		t.Errorf("series name in the option = %q, want %q", got, wantName)
	}
	if m := data.Devices[0].Markers; m == nil || len(m.RangeNames) != 2 || m.RangeNames[1] != hostile || len(m.Ranges) != 2 {
		t.Errorf("annotation ranges in the markers = %+v, want two, the hostile name second", m)
	}
	// ... and are escaped in the HTML text.
	for _, want := range []string{
		"&lt;/script&gt;&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;",
		"<pre class=\"summary\">File\n  path: &lt;/script&gt;",
		"&lt;!-- &#39;q&#39; &amp;amp; {a|b} &lt;module&gt;",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
	for _, want := range []string{
		"<h2>Device 0</h2>", "<h2>Device 1</h2>", "Memory timeline</h3>", "memory_summary()</h3>",
		"Live memory and possible leaks</h3>", "OOM at entry 4: 1.0 GiB requested", "2 of 3 record_function ranges drawn",
		"1 of 3 segments", "No trace entries for this device",
		"(the top 2 groups; the rest as &ldquo;other&rdquo;)", "Peak: 3.5 KiB allocated at 0.500 s.",
		"The chart opens on the part with the activity.",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	// Golden: the data island (chart options included), indented, and
	// the page without the bundle.
	var island bytes.Buffer
	if err := json.Indent(&island, dataIsland(t, page), "", "  "); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "synthetic.html.data.json"), island.String()+"\n")
	checkGolden(t, filepath.Join("testdata", "synthetic.html"), strings.Replace(page, echarts.JSSource, "/* echarts.min.js */", 1))
}

func TestHTMLRenderChartPanic(t *testing.T) {
	_, _, err := htmlRenderChart(panicky{}, "x", "10px")
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("htmlRenderChart(panicking chart) = %v, want an error holding the panic", err)
	}
}

type panicky struct{}

func (panicky) Validate()            {}
func (panicky) JSON() map[string]any { panic("boom") }

func TestHTMLCheckInline(t *testing.T) {
	tests := []struct {
		in     string
		wantOK bool
	}{
		{`var a = "<\/script>";`, true},
		{`a < b && c > d`, true},
		{`"</script>"`, false},
		{`"</SCRIPT >"`, false},
		{`"<!-- x"`, false},
		{`"<script>"`, false},
	}
	for _, tt := range tests {
		err := htmlCheckInline("x", []byte(tt.in))
		if (err == nil) != tt.wantOK {
			t.Errorf("htmlCheckInline(%q) = %v, want ok %v", tt.in, err, tt.wantOK)
		}
	}
}

// sharedSnapshot loads a snapshot of ../shared, skipping without it.
func sharedSnapshot(t testing.TB, rel string) *snapshot.Snapshot {
	t.Helper()
	path := corpus.Path(t, rel)
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHTMLYTicks(t *testing.T) {
	const mib = 1 << 20
	for _, tt := range []struct {
		hi, interval, top int64
	}{
		{0, 0, 0},
		{1, 1, 1},
		{7, 1, 7},
		{9, 2, 10},
		{731 * mib, 128 * mib, 768 * mib}, // leak_train: not 190.7, 381.5, 572.2 MiB
		{406 * mib, 64 * mib, 448 * mib},
		{1024 * mib, 128 * mib, 1024 * mib},
	} {
		tl := &timeline.Timeline{Reserved: []int64{0, tt.hi}, Active: []int64{0, tt.hi / 2}, Allocated: []int64{0, 0}}
		interval, top := htmlYTicks(tl)
		if interval != tt.interval || top != tt.top {
			t.Errorf("htmlYTicks(%d) = %d, %d; want %d, %d", tt.hi, interval, top, tt.interval, tt.top)
		}
	}
}

func TestHTMLActiveZoom(t *testing.T) {
	// A start-up of 4 s with 3 entries, then 17 entries over 0.4 s.
	startup := []int64{0, 1_000, 2_000}
	for i := range 17 {
		startup = append(startup, 4_000_000+int64(i)*25_000)
	}
	last := startup[len(startup)-1] // 4.4 s
	tests := []struct {
		name   string
		timeUS []int64
		keep   []int
		want   *Zoom
	}{
		{"idle start", startup, []int{15}, &Zoom{X0: 4_000_000 - 20_000, X1: last}},
		{"the peak in the start-up", startup, []int{1}, nil},
		{"idle end", reverseTimes(startup), []int{5}, &Zoom{X0: 0, X1: 400_000 + 20_000}},
		{"no long gap", []int64{0, 10, 20, 30, 40}, nil, nil},
		{"too many entries before the gap", []int64{0, 1, 2, 3, 100, 101, 102, 103, 104, 105}, nil, nil},
		{"too short", []int64{0, 100}, nil, nil},
	}
	for _, tt := range tests {
		got := htmlActiveZoom(tt.timeUS, tt.keep)
		if got != nil {
			if !strings.Contains(got.Note, "whole trace") {
				t.Errorf("%s: note %q", tt.name, got.Note)
			}
			got = &Zoom{X0: got.X0, X1: got.X1}
		}
		if !cmp.Equal(got, tt.want) {
			t.Errorf("%s: htmlActiveZoom = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

// reverseTimes mirrors a trace's times: its end becomes its start.
func reverseTimes(ts []int64) []int64 {
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[len(ts)-1-i] = ts[len(ts)-1] - t
	}
	return out
}

func TestBuildHTMLShared(t *testing.T) {
	tests := []struct {
		name      string
		wantOOMs  int
		maxBytes  int
		wantLeaks []string // labels of suspicious leak rows (meta.json ground truth)
	}{
		{"torch2.11/leak_train/snapshot.pickle", 0, 5 << 20, []string{
			"snapgen.py:161 forward (via relu)",        // leak 1: activations kept by the graph
			"snapgen.py:162 forward (via relu)",        // leak 1
			"snapgen.py:171 leak_train",                // leak 1: the inputs
			"snapgen.py:180 leak_train",                // leak 2: feature_log clones
			"snapgen.py:161 forward (via _max_pool2d)", // leak 1
		}},
		{"torch2.11/oom/snapshot.pickle", 1, 5 << 20, nil},
		{"torch2.11/annotations/snapshot.pickle", 0, 5 << 20, nil},
		{"torch2.11/two_devices/snapshot.pickle", 0, 5 << 20, nil},
		{"torch2.11/legacy_segments/snapshot.pickle", 0, 5 << 20, nil},
		{"torch2.11/state_only/snapshot.pickle", 0, 5 << 20, nil},
		// Device 0 has no steps, device 2 three repetitions of one
		// allocation in a DataParallel worker's forward pass: growth
		// cannot be judged, so no row is drawn as a leak.
		{"public/p32-3dev-expandable-oom.pickle", 1, 16 << 20, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sharedSnapshot(t, tt.name)
			r, err := buildHTML(s, Options{Title: tt.name})
			if err != nil {
				t.Fatalf("BuildHTML: %v", err)
			}
			page := writeHTMLString(t, r)
			if len(page) > tt.maxBytes {
				t.Errorf("report is %d bytes, want at most %d", len(page), tt.maxBytes)
			}
			var ids []string
			ooms := 0
			for _, d := range r.Devices {
				if d.Timeline != nil && len(d.Timeline.Index) > 0 {
					ids = append(ids, htmlChartID("timeline", d.Device))
					if d.Peak == nil {
						t.Errorf("device %d: timeline without a peak", d.Device)
					}
				}
				if len(d.Segments) > 0 {
					ids = append(ids, htmlChartID("segments", d.Device))
				}
				ooms += len(d.OOMs)
			}
			if ooms != tt.wantOOMs {
				t.Errorf("%d OOM markers, want %d", ooms, tt.wantOOMs)
			}
			for _, want := range tt.wantLeaks {
				if !slices.ContainsFunc(r.Devices[0].Leaks, func(l Leak) bool { return l.Label == want && l.Suspicious }) {
					t.Errorf("no suspicious leak row for %q", want)
				}
			}
			for _, d := range r.Devices {
				for _, l := range d.Leaks {
					if l.Suspicious && len(tt.wantLeaks) == 0 {
						t.Errorf("device %d: leak row %q (%s), want none", d.Device, l.Label, l.Detail)
					}
				}
			}
			checkPageStructure(t, page, ids)
			// --top 10: at most ten groups drawn on their own, "other" not
			// counted among them.
			for _, d := range r.Devices {
				n := 0
				for _, g := range d.Groups {
					if !g.Other {
						n++
					}
				}
				if n > 10 || len(d.Groups) > 0 && !strings.Contains(page, fmt.Sprintf("(the top %d groups", n)) {
					t.Errorf("device %d: %d groups drawn besides other, and the page says %q", d.Device, n,
						regexp.MustCompile(`the top \d+ groups?`).FindString(page))
				}
			}
			// Recordings that idle for seconds before the first step open
			// on the steps.
			if strings.Contains(tt.name, "leak_train") || strings.Contains(tt.name, "two_devices") {
				for _, d := range r.Devices {
					if d.Zoom == nil || d.Zoom.X0 < 4_000_000 {
						t.Errorf("device %d: zoom %+v, want one after the 4 s start-up", d.Device, d.Zoom)
					}
				}
			}
			r2, err := buildHTML(s, Options{Title: tt.name})
			if err != nil {
				t.Fatal(err)
			}
			if writeHTMLString(t, r2) != page {
				t.Error("two reports of the same snapshot differ")
			}
		})
	}
}

// buildHTML is Build of s, analysed as the report command does.
func buildHTML(s *snapshot.Snapshot, opt Options) (*Report, error) {
	return Build(analysis.New(s, opt.Analysis()), opt)
}

// TestGroupLabelsTellStacksApart: two stacks that leave the program at
// one line (Adam's _init_group making exp_avg at adam.py:178 and
// exp_avg_sq at :182) are labelled by the frame where they part, not by
// " #2".
func TestGroupLabelsTellStacksApart(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := buildHTML(s, Options{Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var got []string
	for _, g := range r.Devices[0].Groups {
		if seen[g.Label] {
			t.Errorf("two groups labelled %q", g.Label)
		}
		seen[g.Label] = true
		if regexp.MustCompile(` #\d+$`).MatchString(g.Label) {
			t.Errorf("label %q: a number instead of the frame that differs", g.Label)
		}
		got = append(got, g.Label)
	}
	for _, want := range []string{"snapgen.py:80 train_steps (via _init_group) at adam.py:178 _init_group",
		"snapgen.py:80 train_steps (via _init_group) at adam.py:182 _init_group"} {
		if !seen[want] {
			t.Errorf("no group labelled %q; labels: %q", want, got)
		}
	}
}
