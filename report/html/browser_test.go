package html

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// browserPageWait bounds everything done on one page: hang detection for
// a loaded machine, not a measure of speed.
const browserPageWait = 5 * time.Minute

// browserPanel is what the state panel of a device shows, read from the
// page: the heading, the cells of the top-stacks table's total row, and
// the segment chart (its segment names and block rows).
type browserPanel struct {
	At    string     `json:"at"`
	Total []string   `json:"total"`
	Names []string   `json:"names"`
	Rows  [][]int64  `json:"rows"`
	Extra [][]string `json:"extra"`
}

// browserPanelJS reads a device's state panel (%[1]s: the section, %[2]s:
// the segment chart's id).
const browserPanelJS = `(function () {
  var at = document.getElementById(%[1]q + "-state-at");
  var rows = document.getElementById(%[1]q + "-top").querySelectorAll("tr");
  var total = [];
  rows[rows.length - 1].querySelectorAll("td").forEach(function (td) { total.push(td.textContent); });
  var out = {at: at ? at.textContent : "", total: total, names: [], rows: []};
  var el = document.getElementById(%[2]q);
  var c = el && echarts.getInstanceByDom(el);
  if (c) {
    var o = c.getOption();
    out.names = o.yAxis[0].data || [];
    out.rows = (o.dataset && o.dataset[0].source) || [];
  }
  return out;
})()`

// browserDevice is what the test needs of a device's charts on the page.
type browserDevice struct {
	Section  string `json:"section"`
	Timeline string `json:"timeline"`
	Segments string `json:"segments"`
	ByIndex  bool   `json:"byIndex"`
	Live     bool   `json:"live"`
}

const browserDevicesJS = `(function () {
  var data = JSON.parse(document.getElementById("snapview-data").textContent);
  return data.devices.map(function (d) {
    return {section: d.section, timeline: d.timeline ? d.timeline.id : "", segments: d.segments ? d.segments.id : "",
      byIndex: !!d.xByIndex, live: !!(d.inspect && d.inspect.live)};
  });
})()`

// browserClickJS scrolls the timeline (%[1]q) into view and returns the
// viewport point of dataset row %[2]d, 8 pixels above the grid's bottom,
// then the lowest and highest entry a click there may show: those drawn
// within a pixel of it (by index, the entries the pixel spans; by time,
// the rows' entries, the nearest row's included).
const browserClickJS = `(function () {
  var el = document.getElementById(%[1]q);
  el.scrollIntoView({block: "center"});
  var c = echarts.getInstanceByDom(el);
  var rows = c.getOption().dataset[0].source;
  var r = rows[%[2]d], byIndex = %[3]t;
  var p = c.convertToPixel({gridIndex: 0}, [r[0], 0]);
  var xl = c.convertFromPixel({gridIndex: 0}, [p[0] - 1, p[1]])[0];
  var xr = c.convertFromPixel({gridIndex: 0}, [p[0] + 1, p[1]])[0];
  var lo, hi;
  if (byIndex) {
    lo = Math.floor(xl); hi = Math.ceil(xr);
  } else {
    lo = hi = r[1];
    rows.forEach(function (q) { if (q[0] >= xl && q[0] <= xr) { lo = Math.min(lo, q[1]); hi = Math.max(hi, q[1]); } });
  }
  var rect = el.getBoundingClientRect();
  document.documentElement.removeAttribute("data-inspected");
  return [rect.left + p[0], rect.top + p[1] - 8, lo, hi];
})()`

// browserHoverJS returns the viewport point in the middle of the largest
// rectangle, at least 12 pixels both ways within the grid, that lies in
// group %[2]d's band of the timeline %[1]q over consecutive steps (a
// row's value holds to the next row: step "end"), or [] when there is
// none. The other series' lines (invisible for the groups) take the mouse
// near them, and they stay outside such a rectangle.
const browserHoverJS = `(function () {
  var el = document.getElementById(%[1]q);
  el.scrollIntoView({block: "center"});
  var c = echarts.getInstanceByDom(el);
  var rows = c.getOption().dataset[0].source, g = %[2]d, best = null, score = 0;
  // Both axes are linear: y pixels from two points, x pixels per row.
  var y0 = c.convertToPixel({gridIndex: 0}, [rows[0][0], 0])[1];
  var y1 = c.convertToPixel({gridIndex: 0}, [rows[0][0], 1 << 20])[1];
  function ypx(v) { return y0 + (y1 - y0) * v / (1 << 20); }
  var lo = [], hi = [], xs = [];
  for (var i = 0; i < rows.length; i++) {
    var below = 0;
    for (var k = 0; k < g; k++) { below += rows[i][5 + k]; }
    lo.push(below);
    hi.push(below + rows[i][5 + g]);
    xs.push(c.convertToPixel({gridIndex: 0}, [rows[i][0], 0])[0]);
  }
  for (var i = 0; i + 1 < rows.length; i++) {
    var l = lo[i], h = hi[i];
    for (var j = i; j + 1 < rows.length; j++) {
      l = Math.max(l, lo[j]);
      h = Math.min(h, hi[j]);
      if (!(h > l)) { break; }
      var al = ypx(l), ah = ypx(h), hgt = Math.abs(al - ah);
      if (hgt < 12) { break; }
      var mid = [(xs[i] + xs[j + 1]) / 2, (al + ah) / 2];
      var s = Math.min(Math.abs(xs[j + 1] - xs[i]), hgt);
      if (s > score && c.containPixel({gridIndex: 0}, mid)) { score = s; best = mid; }
    }
  }
  if (!best || score < 12) { return []; }
  var rect = el.getBoundingClientRect();
  return [rect.left + best[0], rect.top + best[1]];
})()`

var browserSegmentsRE = regexp.MustCompile(`([\d,]+) segments? \((.*) reserved\)$`)

// TestBrowserInteractions drives reports of real snapshots in headless
// Chromium (chromedp, no network) as a person does: it clicks the
// timeline at several rows and compares the state panel with
// [replay.Result.StateAt] (what `snapview state --at entry:N --json`
// prints) at the entry the page says it shows; it hovers the areas and
// compares the stack shown with the group's; it zooms (dataZoom, then
// the mouse wheel over the grid) and checks the
// visible range; it checks that each OOM has its marker; it hovers the
// single allocations drawn on their own and compares their size and
// stack with the replay's, and pins one with a click. It skips only
// when Chromium is absent.
func TestBrowserInteractions(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := findChromium()
	if bin == "" {
		t.Skip("chromium not found (apt-get install chromium, or set SNAPVIEW_CHROMIUM): skipping the browser test")
	}
	paths := []string{
		filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"),
		filepath.Join("..", "..", "testdata", "snapshots", "monitor_train.pickle"),
		filepath.Join("..", "..", "testdata", "snapshots", "whatif", "frag_oom", "default_cap2048M", "snapshot.pickle.xz"),
	}
	if dir := corpus.Find(t); dir != "" {
		paths = append(paths, corpus.Match(t, dir, "torch2.11/*/snapshot.pickle", 10)...)
	}

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000), chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("disable-quic", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}

	dir := t.TempDir()
	var clicks, compared, hovers, singles, zooms, ooms int
	for _, path := range paths {
		name := filepath.Base(filepath.Dir(path)) + "_" + strings.SplitN(filepath.Base(path), ".", 2)[0]
		t.Run(name, func(t *testing.T) {
			s, err := snapshot.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			r, err := buildHTML(s, Options{Title: name})
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, name+".html")
			if err := os.WriteFile(file, []byte(writeHTMLString(t, r)), 0o644); err != nil {
				t.Fatal(err)
			}
			tctx, cancelTab := chromedp.NewContext(bctx)
			defer cancelTab()
			ctx, cancel := context.WithTimeout(tctx, browserPageWait)
			defer cancel()
			if err := chromedp.Do(ctx,
				chromedp.Navigate("file://"+file),
				chromedp.WaitReady(chromedp.CSS(`html[data-charts]`))); err != nil {
				t.Fatalf("opening the page: %v", err)
			}
			// Click only once the page has drawn all it draws without
			// input (the detail island's redraw moves what the clicks
			// aim at).
			browserWaitSettled(t, ctx)
			devs := browserEval[[]browserDevice](t, ctx, browserDevicesJS)
			for k, d := range r.Devices {
				if k >= len(devs) || devs[k].Timeline == "" {
					continue
				}
				pd := devs[k]
				res, err := replay.Run(s, d.Device, replay.Options{})
				if err != nil {
					t.Fatal(err)
				}
				nRows := browserEval[int](t, ctx, fmt.Sprintf(
					`echarts.getInstanceByDom(document.getElementById(%q)).getOption().dataset[0].source.length`, pd.Timeline))

				// The OOM markers, at the OOM entries' x.
				if len(res.OOMs) > 0 {
					xs := browserEval[[]float64](t, ctx, fmt.Sprintf(`(function () {
  var o = echarts.getInstanceByDom(document.getElementById(%q)).getOption(), xs = [];
  o.series.forEach(function (s) { ((s.markLine && s.markLine.data) || []).forEach(function (m) {
    if (/^OOM /.test(m.name)) { xs.push(m.xAxis); } }); });
  return xs;
})()`, pd.Timeline))
					for _, i := range res.OOMs {
						want := float64(i)
						if !pd.ByIndex {
							tr := s.Traces[d.Device]
							want = float64(tr[i].TimeUS-tr[0].TimeUS) / 1000
						}
						found := false
						for _, x := range xs {
							if x == want {
								found = true
							}
						}
						if !found {
							t.Errorf("device %d: no OOM marker at entry %d (x %v); markers at %v", d.Device, i, want, xs)
						}
						ooms++
					}
				}

				// Clicks: rows spread over the dataset, the peak's and the
				// OOMs' rows.
				if pd.Live && pd.Segments != "" {
					targets := []int{0, nRows / 4, nRows / 2, 3 * nRows / 4, nRows - 1}
					for _, i := range append([]int{res.PeakIndex}, res.OOMs...) {
						for row, e := range d.Timeline.Index {
							if e == i {
								targets = append(targets, row)
							}
						}
					}
					seen := map[int]bool{}
					for _, row := range targets {
						pt := browserEval[[]float64](t, ctx, fmt.Sprintf(browserClickJS, pd.Timeline, row, pd.ByIndex))
						if err := chromedp.Do(ctx, chromedp.MouseClickXY(pt[0], pt[1])); err != nil {
							t.Fatal(err)
						}
						got, err := chromedp.Run(ctx, chromedp.Evaluate[string](browserInspectedJS, chromedp.EvalAwaitPromise))
						if err != nil || got == "" {
							t.Fatalf("device %d: clicking row %d at (%.0f, %.0f): the page showed no state within %d animation frames (%v)", d.Device, row, pt[0], pt[1], browserInspectFrames, err)
						}
						clicks++
						i, err := strconv.Atoi(got)
						if err != nil {
							t.Fatalf("data-inspected %q", got)
						}
						if float64(i) < pt[2] || float64(i) > pt[3] {
							t.Errorf("device %d: clicking row %d at (%.0f, %.0f) shows the state after entry %d, want one of entries %.0f to %.0f (drawn within a pixel)",
								d.Device, row, pt[0], pt[1], i, pt[2], pt[3])
						}
						if seen[i] {
							continue
						}
						seen[i] = true
						if i == len(res.Allocated)-1 && !res.Check.Equal {
							continue // the page shows the replay's state; the file's differs
						}
						p := browserEval[browserPanel](t, ctx, fmt.Sprintf(browserPanelJS, pd.Section, pd.Segments))
						st, err := res.StateAt(i)
						if err != nil {
							t.Fatal(err)
						}
						for _, e := range browserCompare(p, st, i) {
							t.Errorf("device %d, after clicking row %d: %s", d.Device, row, e)
						}
						compared++
					}
				}

				// Hovers: each drawn group's band.
				for g, grp := range d.Groups {
					pt := browserEval[[]float64](t, ctx, fmt.Sprintf(browserHoverJS, pd.Timeline, g))
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
					shown := browserEval[[]string](t, ctx, fmt.Sprintf(`Array.prototype.map.call(document.getElementById(%q).querySelectorAll(".tt-head, .tt-frame"), function (e) { return e.textContent; })`, pd.Section+"-hover"))
					want := []string{grp.Label}
					if grp.Stack >= 0 {
						frames := r.Stacks[grp.Stack]
						if len(frames) > 40 {
							want = append(want, frames[:40]...)
							want = append(want, fmt.Sprintf("\u2026 %d more", len(frames)-40))
						} else {
							want = append(want, frames...)
						}
						if len(frames) == 0 {
							want = append(want, "<no stack recorded>")
						}
					} else {
						want = append(want, "the allocations of every stack not drawn on its own")
					}
					if strings.Join(shown, "\n") != strings.Join(want, "\n") {
						t.Logf("what ECharts finds under the mouse: %v", browserEval[any](t, ctx, fmt.Sprintf(`(function () {
  var el = document.getElementById(%q), c = echarts.getInstanceByDom(el), rect = el.getBoundingClientRect();
  var h = c.getZr().handler.findHover(%v - rect.left, %v - rect.top), out = [];
  for (var e = h.target; e; e = e.parent) {
    var info = e.type || "?";
    Object.keys(e).forEach(function (k) { var v = e[k]; if (v && typeof v === "object" && "seriesIndex" in v) { info += " series " + v.seriesIndex + " " + v.componentType + " " + v.dataIndex; } });
    out.push(info);
  }
  return out.join(" < ") + " topTarget " + (h.topTarget && h.topTarget.type);
})()`, pd.Timeline, pt[0], pt[1])))
					}
					if strings.Join(shown, "\n") != strings.Join(want, "\n") {
						t.Errorf("device %d: hovering group %d (%q) at (%.0f, %.0f) shows\n%s\nwant\n%s", d.Device, g, grp.Label, pt[0], pt[1],
							strings.Join(shown, "\n"), strings.Join(want, "\n"))
					}
					hovers++
				}

				// The single allocations drawn on their own: hover shows
				// the replay's size, requested size and stack; a click pins.
				if d.Timeline != nil && len(d.Singles) > 0 {
					browserWaitDetail(t, ctx)
					singles += browserCheckSingles(t, ctx, r, &d, pd, res, 2)
				}

				// Zoom: the visible x range narrows to the middle fifth.
				if nRows > 2 {
					zoomed := fmt.Sprintf(`(function () {
  var c = echarts.getInstanceByDom(document.getElementById(%q));
  return c.getModel().getComponent("xAxis", 0).axis.scale.getExtent();
})()`, pd.Timeline)
					zoom := `echarts.getInstanceByDom(document.getElementById(%q)).dispatchAction({type: "dataZoom", dataZoomIndex: 0, start: %d, end: %d}); ""`
					var ext [2][]float64
					late := browserEval[string](t, ctx, browserZoomLateJS)
					browserEval[string](t, ctx, fmt.Sprintf(zoom, pd.Timeline, 0, 100))
					ext[0] = browserEval[[]float64](t, ctx, zoomed)
					browserEval[string](t, ctx, fmt.Sprintf(zoom, pd.Timeline, 40, 60))
					ext[1] = browserEval[[]float64](t, ctx, zoomed)
					full, part := ext[0][1]-ext[0][0], ext[1][1]-ext[1][0]
					if !(part > 0 && part < full*0.3 && ext[1][0] > ext[0][0] && ext[1][1] < ext[0][1]) {
						t.Errorf("device %d: zooming to 40-60%% shows x %v, the whole chart %v", d.Device, ext[1], ext[0])
					}
					zooms++

					// The mouse wheel over the middle of the grid zooms in
					// around the mouse.
					browserEval[string](t, ctx, fmt.Sprintf(zoom, pd.Timeline, 0, 100))
					mid := browserEval[[]float64](t, ctx, fmt.Sprintf(`(function () {
  var el = document.getElementById(%q), c = echarts.getInstanceByDom(el), rect = el.getBoundingClientRect();
  var g = c.getModel().getComponent("grid", 0).coordinateSystem.getRect();
  var x = g.x + g.width / 2, y = g.y + g.height / 2;
  return [rect.left + x, rect.top + y, c.convertFromPixel({gridIndex: 0}, [x, y])[0]];
})()`, pd.Timeline))
					// Chromium wants deltaX too, and cdproto leaves a zero out.
					wheel := func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 0.01, -300 }
					var wext []float64
					for try := 0; ; try++ {
						if err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, mid[0], mid[1], wheel)); err != nil {
							t.Fatalf("device %d: the mouse wheel: %v", d.Device, err)
						}
						wext = browserEval[[]float64](t, ctx, zoomed)
						if wext[1]-wext[0] < full*0.9 || try == 20 {
							break
						}
						time.Sleep(50 * time.Millisecond)
					}
					if !(wext[1]-wext[0] < full*0.9 && wext[0] <= mid[2] && mid[2] <= wext[1]) {
						t.Errorf("device %d: the mouse wheel at x %v leaves x %v, the whole chart %v", d.Device, mid[2], wext, ext[0])
					}
					// Each zoom, by the API and by the wheel (ECharts'
					// own dispatch), was drawn before ECharts laid the
					// chart out (report.js hookZoom): one layout, not two.
					if got := browserEval[string](t, ctx, browserZoomLateJS); got != late {
						t.Errorf("device %d: %s zooms were laid out twice (data-zoom-late %q, was %q)", d.Device, got, got, late)
					}
					zooms++
				}
			}
		})
	}
	t.Logf("%d files; %d clicks, %d states compared; %d hovers, %d of single allocations; %d zooms; %d OOM markers", len(paths), clicks, compared, hovers, singles, zooms, ooms)
	if clicks == 0 || compared == 0 || hovers == 0 || singles == 0 || zooms == 0 {
		t.Errorf("nothing checked: %d clicks, %d states, %d hovers, %d single allocations, %d zooms", clicks, compared, hovers, singles, zooms)
	}
}

// browserZoomLateJS reads how many zooms report.js had to redraw after
// ECharts had laid the chart out (data-zoom-late).
const browserZoomLateJS = `document.documentElement.getAttribute("data-zoom-late") || "0"`

// browserEval evaluates expr in the page and returns its value, ending
// t on an error.
// browserInspectFrames bounds the wait for a clicked state by the page's
// own progress (animation frames), not by the clock: a slow machine draws
// frames slowly too, and a click that shows nothing fails instead of
// hanging until go test's timeout.
const browserInspectFrames = 18000 // 5 minutes at 60 frames a second: a guard against a hang, far above any real wait

// browserInspectedJS resolves to the page's data-inspected attribute (the
// entry the state panel shows) once it is set, or to "" after
// browserInspectFrames animation frames.
var browserInspectedJS = fmt.Sprintf(`new Promise(function (done) {
  var n = 0;
  (function poll() {
    var v = document.documentElement.getAttribute("data-inspected") || "";
    if (v || ++n >= %d) { done(v); } else { requestAnimationFrame(poll); }
  })();
})`, browserInspectFrames)

func browserEval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %.200s: %v", expr, err)
	}
	return v
}

// browserCompare returns the differences between the state panel p and
// st, the state after entry i.
func browserCompare(p browserPanel, st *replay.State, i int) []string {
	var errs []string
	if want := "after entry " + units.Int(i) + " (clicked on the timeline)"; p.At != want {
		errs = append(errs, fmt.Sprintf("heading %q, want %q", p.At, want))
	}
	var reserved, allocated int64
	var count int
	for _, sg := range st.Segments {
		reserved += sg.Size
		for _, b := range sg.Blocks {
			if htmlStateName(b.State) == "allocated" {
				allocated += b.Size
				count++
			}
		}
	}
	if len(p.Total) != 3 {
		return append(errs, fmt.Sprintf("total row %q", p.Total))
	}
	m := browserSegmentsRE.FindStringSubmatch(p.Total[0])
	if m == nil {
		errs = append(errs, fmt.Sprintf("total row %q: no segment count", p.Total[0]))
	} else {
		if want := units.Int(len(st.Segments)); m[1] != want {
			errs = append(errs, fmt.Sprintf("after entry %d: %s segments shown, state has %s", i, m[1], want))
		}
		if want := units.Bytes(reserved); m[2] != want {
			errs = append(errs, fmt.Sprintf("after entry %d: %s reserved shown, state has %s", i, m[2], want))
		}
	}
	if want := units.Bytes(allocated); p.Total[1] != want {
		errs = append(errs, fmt.Sprintf("after entry %d: %s allocated shown, state has %s", i, p.Total[1], want))
	}
	if want := units.Int(count); p.Total[2] != want {
		errs = append(errs, fmt.Sprintf("after entry %d: %s allocations shown, state has %s", i, p.Total[2], want))
	}
	// The segment chart: each segment shown, its blocks, as the state.
	byAddr := map[string]*replay.StateSegment{}
	for k := range st.Segments {
		byAddr[fmt.Sprintf("%#x", uint64(st.Segments[k].Addr))] = &st.Segments[k]
	}
	if want := min(len(st.Segments), 200); len(p.Names) != want && len(p.Names) != len(st.Segments) {
		errs = append(errs, fmt.Sprintf("after entry %d: the segment chart shows %d segments, state has %d", i, len(p.Names), len(st.Segments)))
	}
	codes := map[string]int64{"allocated": 0, "pending free": 1, "free": 2}
	blocks := make([][][3]int64, len(p.Names))
	for _, row := range p.Rows {
		if len(row) < 6 || row[0] < 0 || int(row[0]) >= len(blocks) {
			errs = append(errs, fmt.Sprintf("segment chart row %v", row))
			continue
		}
		blocks[row[0]] = append(blocks[row[0]], [3]int64{row[1], row[2], row[5]})
	}
	for k, nm := range p.Names {
		addr := strings.Fields(nm)[0]
		sg := byAddr[addr]
		if sg == nil {
			errs = append(errs, fmt.Sprintf("after entry %d: the segment chart shows %s, not in the state", i, nm))
			continue
		}
		var want [][3]int64
		for _, b := range sg.Blocks {
			off := int64(b.Addr - sg.Addr)
			want = append(want, [3]int64{off, off + b.Size, codes[htmlStateName(b.State)]})
		}
		if fmt.Sprint(blocks[k]) != fmt.Sprint(want) {
			errs = append(errs, fmt.Sprintf("after entry %d, segment %s: the page's blocks [start end state] %v, state's %v", i, addr, blocks[k], want))
		}
	}
	return errs
}
