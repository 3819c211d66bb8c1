package html

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// browserSingle is one single allocation the page draws on its own
// (report.js snapviewShownSingles).
type browserSingle struct {
	Start, End, Group, Stack int
	Size, Requested          int64
	Addr                     uint64
}

// browserWaitDetail waits until the page has read its detail island
// (data-detail), which report.js does after the first paint.
func browserWaitDetail(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.getAttribute("data-detail") === "1"`, chromedp.WithPollingTimeout(browserPageWait))); err != nil {
		t.Fatalf("the page never read its detail island: %v", err)
	}
}

// browserWaitSettled waits until the page has drawn all it will draw
// without input: its detail island read (data-detail), or no island.
func browserWaitSettled(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`!document.getElementById("snapview-detail") || document.documentElement.getAttribute("data-detail") === "1"`, chromedp.WithPollingTimeout(browserPageWait))); err != nil {
		t.Fatalf("the page never read its detail island: %v", err)
	}
}

// browserCheckSingles hovers up to max of the single allocations the
// timeline of pd draws on their own and compares what the panel under the
// chart shows with the allocation in the replay (size, requested size,
// stack, alloc entry), then clicks the last one hovered and checks that it
// is pinned. It returns how many it hovered.
func browserCheckSingles(t *testing.T, ctx context.Context, r *Report, d *DeviceView, pd browserDevice, res *replay.Result, max int) int {
	t.Helper()
	shown := browserEval[[]browserSingle](t, ctx, fmt.Sprintf(`snapviewShownSingles(%q)`, pd.Section))
	byStart := map[int][]*replay.Allocation{}
	for k := range res.Allocs {
		a := &res.Allocs[k]
		byStart[a.AllocIndex] = append(byStart[a.AllocIndex], a)
	}
	hovered := 0
	var last []float64
	var lastSingle browserSingle
	for k, sg := range shown {
		if hovered >= max {
			break
		}
		// The allocation is the replay's.
		found := false
		for _, a := range byStart[sg.Start] {
			if uint64(a.Addr) == sg.Addr && a.Size == sg.Size && a.Requested == sg.Requested {
				found = true
			}
		}
		if !found {
			t.Errorf("device %d: single %d (%s at %#x, alloc entry %d) is not an allocation of the replay", d.Device, k, units.Bytes(sg.Size), sg.Addr, sg.Start)
			continue
		}
		pt := browserEval[[]float64](t, ctx, fmt.Sprintf(browserHoverJS, pd.Timeline, len(d.Groups)+k))
		if len(pt) != 2 {
			continue
		}
		browserEval[string](t, ctx, fmt.Sprintf(`document.getElementById(%q).innerHTML = ""; ""`, pd.Section+"-hover"))
		if err := chromedp.Do(ctx,
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 1, 1),
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pt[0]-3, pt[1]),
			chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, pt[0], pt[1])); err != nil {
			t.Fatal(err)
		}
		shownText := browserEval[[]string](t, ctx, fmt.Sprintf(`Array.prototype.map.call(document.getElementById(%q).querySelectorAll(".tt-head, .tt-row, .tt-frame"), function (e) { return e.textContent; })`, pd.Section+"-hover"))
		want := []string{fmt.Sprintf("allocation of %s at %#x", units.Bytes(sg.Size), sg.Addr), "size" + units.Bytes(sg.Size)}
		if !d.RequestedUnknown {
			want = append(want, "requested"+units.Bytes(sg.Requested))
		}
		frames := []string{"<no stack recorded>"}
		if sg.Stack >= 0 {
			frames = r.Stacks[sg.Stack]
		}
		if len(shownText) < len(want) || strings.Join(shownText[:len(want)], "\n") != strings.Join(want, "\n") {
			t.Errorf("device %d: hovering single %d shows\n%s\nwant it to start with\n%s", d.Device, k, strings.Join(shownText, "\n"), strings.Join(want, "\n"))
			continue
		}
		if got := strings.Join(shownText[len(shownText)-min(len(frames), 40):], "\n"); len(frames) <= 40 && got != strings.Join(frames, "\n") {
			t.Errorf("device %d: hovering single %d shows the frames\n%s\nwant\n%s", d.Device, k, got, strings.Join(frames, "\n"))
		}
		hovered++
		last, lastSingle = pt, sg
	}
	if last != nil {
		// A click pins it.
		if err := chromedp.Do(ctx, chromedp.MouseClickXY(last[0], last[1])); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%d:%d", lastSingle.Start, lastSingle.Addr)
		var got string
		for try := 0; try < 100 && got != want; try++ {
			got = browserEval[string](t, ctx, `document.documentElement.getAttribute("data-pinned") || ""`)
			if got != want {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if got != want {
			t.Errorf("device %d: clicking single %d at %#x pinned %q, want %q", d.Device, lastSingle.Start, lastSingle.Addr, got, want)
		}
		if h := browserEval[string](t, ctx, fmt.Sprintf(`document.getElementById(%q).textContent`, pd.Section+"-hover")); !strings.Contains(h, "pinned") || !strings.Contains(h, "in its segment") {
			t.Errorf("device %d: the pinned allocation's panel reads %q", d.Device, h)
		}
		// Unpin: a click elsewhere on the chart.
		browserEval[string](t, ctx, `document.documentElement.removeAttribute("data-pinned"); ""`)
	}
	return hovered
}

// TestBrowserLongTrace opens the report of the 2M-entry snapshot of the
// shared corpus in headless Chromium: the page stays within its budget
// of bytes, zooming to one step redraws it from the trace's own entries
// (the allocated bytes at every drawn entry are the replay's, what `state
// --at entry:N` prints, and the groups and single allocations add up to
// them), and hovering a single allocation shows its size and stack.
func TestBrowserLongTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := findChromium()
	if bin == "" {
		t.Skip("chromium not found: skipping the browser test")
	}
	dir := corpus.Find(t)
	if dir == "" {
		t.Skip("the shared corpus is not here")
	}
	path := filepath.Join(dir, "big", "gpt2_2M_events", "snapshot.pickle.xz")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s: %v", path, err)
	}
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := buildHTML(s, Options{Title: "gpt2_2M_events"})
	if err != nil {
		t.Fatal(err)
	}
	page := writeHTMLString(t, r)
	// The budget of bytes: at most 12 MB, the index within its points.
	if len(page) > 12e6 {
		t.Errorf("the page has %s bytes, more than 12 MB", units.Int(len(page)))
	}
	d := &r.Devices[0]
	points := 0
	for _, lv := range d.Timeline.Levels {
		points += len(lv.Index)
	}
	{
		var o Options
		o.defaults()
		if points > o.LevelPoints || len(d.Timeline.Levels) < 3 {
			t.Errorf("the index has %d levels of %d points in all, want at least 3 of at most %d", len(d.Timeline.Levels), points, o.LevelPoints)
		}
		if len(d.Singles) == 0 || len(d.Singles) > o.Regions*o.PerRegion {
			t.Errorf("%d single allocations, want 1 to %d", len(d.Singles), o.Regions*o.PerRegion)
		}
	}
	if per := d.Timeline.StepsPerPoint; len(d.Steps) < 10 || per != 1 || len(d.Timeline.Index) > 3*(len(d.Steps)+2)+2 {
		t.Fatalf("%d steps, %d a run, %d points at full width: want the envelope of each step (min, max, end)", len(d.Steps), per, len(d.Timeline.Index))
	}
	t.Logf("page %s bytes; %d levels, %d points; %d singles; %d rows at full width for %d steps",
		units.Int(len(page)), len(d.Timeline.Levels), points, len(d.Singles), len(d.Timeline.Index), len(d.Steps))
	file := filepath.Join(t.TempDir(), "long.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := browserContext(t, bin)
	ctx, cancel := context.WithTimeout(ctx, browserPageWait)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitReady(chromedp.CSS(`html[data-charts]`))); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	browserWaitDetail(t, ctx)
	pd := browserEval[[]browserDevice](t, ctx, browserDevicesJS)[0]
	res, err := replay.Run(s, d.Device, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Zoom to the middle step.
	st := d.Steps[len(d.Steps)/2]
	x0, x1 := float64(st.I0), float64(st.I1)
	if !pd.ByIndex {
		x0, x1 = float64(st.X0)/1000, float64(st.X1)/1000
	}
	before := browserEval[string](t, ctx, `document.documentElement.getAttribute("data-redraws") || ""`)
	late := browserEval[string](t, ctx, browserZoomLateJS)
	browserEval[string](t, ctx, fmt.Sprintf(`echarts.getInstanceByDom(document.getElementById(%q)).dispatchAction({type: "dataZoom", dataZoomIndex: 0, startValue: %v, endValue: %v}); ""`, pd.Timeline, x0, x1))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](fmt.Sprintf(`(document.documentElement.getAttribute("data-redraws") || "") !== %q`, before), chromedp.WithPollingTimeout(browserPageWait))); err != nil {
		t.Fatal(err)
	}
	// The zoom was drawn before ECharts laid the chart out (report.js
	// hookZoom): one layout, not two.
	if got := browserEval[string](t, ctx, browserZoomLateJS); got != late {
		t.Errorf("the zoom to one step was laid out twice (data-zoom-late %q, was %q)", got, late)
	}
	rows := browserEval[[][]float64](t, ctx, fmt.Sprintf(`echarts.getInstanceByDom(document.getElementById(%q)).getOption().dataset[0].source`, pd.Timeline))
	inStep := 0
	nG := len(d.Groups)
	for _, row := range rows {
		i := int(row[1])
		if pd.ByIndex {
			i = int(row[0])
		}
		if i >= st.I0 && i <= st.I1 {
			inStep++
		}
		if got, want := int64(row[htmlColAllocated]), res.Allocated[i]; got != want {
			t.Errorf("zoomed to step %s: entry %d drawn with %d bytes allocated, the replay's state has %d", st.Name, i, got, want)
		}
		// The groups and the single allocations (null where one is not
		// drawn), then the running sums report.js draws each area up to
		// (stackRows): the top of the stack is the allocated bytes.
		areas := (len(row) - htmlColGroups) / 2
		var sum, top float64
		for k, v := range row[htmlColGroups : htmlColGroups+areas] {
			if v < 0 {
				t.Errorf("entry %d: a negative area %v", i, row)
			}
			sum += v
			cum := row[htmlColGroups+areas+k]
			if cum == 0 && v == 0 {
				continue // not drawn (null, read as 0)
			}
			if cum != sum {
				t.Errorf("entry %d: area %d is drawn up to %v bytes, the areas up to it add up to %v", i, k, cum, sum)
			}
			top = max(top, cum)
		}
		if int64(sum) != res.Allocated[i] || int64(top) != res.Allocated[i] {
			t.Errorf("entry %d: the groups (%d) and single allocations add up to %d bytes and are drawn up to %d, allocated is %d", i, nG, int64(sum), int64(top), res.Allocated[i])
		}
	}
	// One step of about 4,300 entries: far more than the 3 points of
	// its envelope at full width.
	if inStep < 50 {
		t.Errorf("zoomed to %s (entries %d to %d): %d rows drawn in it", st.Name, st.I0, st.I1, inStep)
	}
	t.Logf("zoomed to %s: %d rows, %d in the step (level %s)", st.Name, len(rows), inStep,
		browserEval[string](t, ctx, `document.documentElement.getAttribute("data-zoom-level")`))
	if n := browserCheckSingles(t, ctx, r, d, pd, res, 3); n == 0 {
		t.Error("no single allocation could be hovered in the zoomed step")
	}
}

// TestBrowserLegendBraces draws a group labelled with a C++ name
// ("at::{anon}::...") and ECharts' rich-text pattern ("{a|b}") in headless
// Chromium and checks that the legend draws the label's own characters,
// braces included, in one piece (nothing read as rich-text markup, no
// stand-in glyph), and that what htmlSafe adds takes no width.
func TestBrowserLegendBraces(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := findChromium()
	if bin == "" {
		t.Skip("chromium not found: skipping the browser test")
	}
	const label = "at::{anon}::log_softmax {a|b} {lambda()#1}"
	r := syntheticHTMLReport()
	r.Devices[0].Groups[0].Label = label
	file := filepath.Join(t.TempDir(), "braces.html")
	if err := os.WriteFile(file, []byte(writeHTMLString(t, r)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := browserContext(t, bin)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitReady(chromedp.CSS(`html[data-charts]`))); err != nil {
		t.Fatal(err)
	}
	type drawn struct {
		Texts          []string
		Width, Visible float64
	}
	got := browserEval[drawn](t, ctx, fmt.Sprintf(`(function () {
  var c = echarts.getInstanceByDom(document.getElementById("timeline_d0"));
  var out = {texts: [], width: -1, visible: -1};
  c.getZr().storage.getDisplayList(true).forEach(function (el) {
    var txt = el.style && el.style.text;
    if (typeof txt !== "string" || txt.indexOf("anon") < 0) { return; }
    out.texts.push(txt);
    var ctx = document.createElement("canvas").getContext("2d");
    ctx.font = el.style.font;
    out.width = ctx.measureText(txt).width;
    out.visible = ctx.measureText(txt.replace(/\u200b/g, "")).width;
  });
  return out;
})()`))
	if len(got.Texts) != 1 || strings.ReplaceAll(got.Texts[0], "\u200b", "") != label {
		t.Errorf("the legend draws %q, want %q in one piece", got.Texts, label)
	}
	if got.Width != got.Visible || got.Width <= 0 {
		t.Errorf("the legend label is %v pixels wide, its characters without the zero-width spaces %v", got.Width, got.Visible)
	}
}

// TestBrowserMultiFile opens pages of several files in headless Chromium:
// the ranks of testdata's DDP run on one clock (every timeline on the
// same x axis, the rank that started later starting further right), and a
// diff page (--base). On each it clicks every timeline and compares the
// state panel with the replay of that file, and hovers each timeline's
// largest group and checks the stack shown (the stacks of several files
// share one table).
func TestBrowserMultiFile(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := findChromium()
	if bin == "" {
		t.Skip("chromium not found: skipping the browser test")
	}
	ranks := ddpReports(t)
	snaps := map[string]*snapshot.Snapshot{}
	for _, name := range []string{"ddp_rank0", "ddp_rank1", "mlp_train"} {
		s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", name+".pickle"))
		if err != nil {
			t.Fatal(err)
		}
		snaps[name] = s
	}
	mlp, err := buildHTML(snaps["mlp_train"], Options{Title: "mlp_train"})
	if err != nil {
		t.Fatal(err)
	}
	pages := map[string]*Report{
		"ranks": Merge(ranks, "ddp", "Ranks", "the ranks table"),
		"diff":  Merge([]*Report{mlp, ddpReports(t)[0]}, "ddp_rank0 against mlp_train", "Diff", "the diff"),
	}
	ctx := browserContext(t, bin)
	dir := t.TempDir()
	for _, name := range []string{"ranks", "diff"} {
		m := pages[name]
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, name+".html")
			if err := os.WriteFile(file, []byte(writeHTMLString(t, m)), 0o644); err != nil {
				t.Fatal(err)
			}
			tctx, cancel := chromedp.NewContext(ctx)
			defer cancel()
			if err := chromedp.Do(tctx, chromedp.Navigate("file://"+file), chromedp.WaitReady(chromedp.CSS(`html[data-charts]`))); err != nil {
				t.Fatal(err)
			}
			// The page redraws once more when it has read its detail
			// island (after the first paint): a click computed before
			// that may land on the old drawing.
			browserWaitSettled(t, tctx)
			if got := browserEval[string](t, tctx, `document.getElementById("compare") ? document.querySelector("#compare pre").textContent : ""`); got != m.Compare {
				t.Errorf("the %s section reads %q, want %q", m.CompareTitle, got, m.Compare)
			}
			devs := browserEval[[]browserDevice](t, tctx, browserDevicesJS)
			var exts [][]float64
			for k, d := range m.Devices {
				pd := devs[k]
				if pd.Timeline == "" {
					continue
				}
				exts = append(exts, browserEval[[]float64](t, tctx, fmt.Sprintf(`echarts.getInstanceByDom(document.getElementById(%q)).getModel().getComponent("xAxis", 0).axis.scale.getExtent()`, pd.Timeline)))
				// A click in the middle shows that file's state.
				s := snaps[d.File]
				res, err := replay.Run(s, d.Device, replay.Options{})
				if err != nil {
					t.Fatal(err)
				}
				nRows := browserEval[int](t, tctx, fmt.Sprintf(`echarts.getInstanceByDom(document.getElementById(%q)).getOption().dataset[0].source.length`, pd.Timeline))
				pt := browserEval[[]float64](t, tctx, fmt.Sprintf(browserClickJS, pd.Timeline, nRows/2, pd.ByIndex))
				if err := chromedp.Do(tctx, chromedp.MouseClickXY(pt[0], pt[1])); err != nil {
					t.Fatal(err)
				}
				got, err := chromedp.Run(tctx, chromedp.Poll[string](`document.documentElement.getAttribute("data-inspected")`, chromedp.WithPollingTimeout(browserPageWait)))
				if err != nil {
					t.Fatal(err)
				}
				i := 0
				fmt.Sscan(got, &i)
				st, err := res.StateAt(i)
				if err != nil {
					t.Fatal(err)
				}
				p := browserEval[browserPanel](t, tctx, fmt.Sprintf(browserPanelJS, pd.Section, pd.Segments))
				for _, e := range browserCompare(p, st, i) {
					t.Errorf("%s, after clicking the middle of its timeline: %s", d.File, e)
				}
				// Hovering the largest group shows its stack.
				hpt := browserEval[[]float64](t, tctx, fmt.Sprintf(browserHoverJS, pd.Timeline, 0))
				if len(hpt) != 2 {
					continue
				}
				if err := chromedp.Do(tctx,
					chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 1, 1),
					chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, hpt[0]-3, hpt[1]),
					chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, hpt[0], hpt[1])); err != nil {
					t.Fatal(err)
				}
				shown := browserEval[[]string](t, tctx, fmt.Sprintf(`Array.prototype.map.call(document.getElementById(%q).querySelectorAll(".tt-head, .tt-frame"), function (e) { return e.textContent; })`, pd.Section+"-hover"))
				if g := d.Groups[0]; g.Stack >= 0 && len(shown) > 1 && (shown[0] != g.Label || shown[1] != m.Stacks[g.Stack][0]) {
					t.Errorf("%s: hovering its largest group shows %q, want %q then %q", d.File, shown[:2], g.Label, m.Stacks[g.Stack][0])
				}
			}
			// One x axis for every timeline.
			for k := 1; k < len(exts); k++ {
				if fmt.Sprint(exts[k]) != fmt.Sprint(exts[0]) {
					t.Errorf("timeline %d spans x %v, timeline 0 %v: not one scale", k, exts[k], exts[0])
				}
			}
			if name == "ranks" {
				// Rank 0 started recording later: its first row is as far
				// right.
				rows := browserEval[[][]float64](t, tctx, fmt.Sprintf(`echarts.getInstanceByDom(document.getElementById(%q)).getOption().dataset[0].source.slice(0, 1)`, devs[0].Timeline))
				want := float64(m.Devices[0].FirstUS-min(m.Devices[0].FirstUS, m.Devices[1].FirstUS)) / 1000
				if len(rows) != 1 || rows[0][0] != want {
					t.Errorf("rank 0's timeline starts at x %v, want %v ms (its late start on one clock)", rows, want)
				}
			}
		})
	}
}
