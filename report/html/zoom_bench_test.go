package html

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// zoomBenchEnv names the environment variable that holds the path of a
// report for BenchmarkZoomRedraw (scripts/zoomredraw.sh sets it).
const zoomBenchEnv = "SNAPVIEW_ZOOM_PAGE"

// zoomRedrawJS zooms the first timeline of the page to the window
// %[1]v-%[2]v%% of its x axis and resolves, on the second animation frame
// after report.js redrew the window (data-redraws; at once on a page
// that does not redraw, or when %[3]v is false: a zoom to what is drawn
// already draws nothing), with the milliseconds since the dataZoom action
// by the page's clock and what was drawn.
const zoomRedrawJS = `new Promise(function (resolve) {
  var data = JSON.parse(document.getElementById("snapview-data").textContent);
  var dev = data.devices.filter(function (d) { return d.timeline; })[0];
  var chart = echarts.getInstanceByDom(document.getElementById(dev.timeline.id));
  function attr(n) { return document.documentElement.getAttribute(n) || ""; }
  var before = attr("data-redraws"), t0 = performance.now();
  chart.dispatchAction({type: "dataZoom", dataZoomIndex: 0, start: %[1]v, end: %[2]v});
  (function wait(tries) {
    if (%[3]v && dev.detail && attr("data-redraws") === before && tries < 1000) { setTimeout(function () { wait(tries + 1); }, 0); return; }
    requestAnimationFrame(function () { requestAnimationFrame(function () {
      resolve({ms: performance.now() - t0, level: attr("data-zoom-level"), rows: attr("data-zoom-rows"), singles: attr("data-zoom-singles"), redraw: attr("data-zoom-ms")});
    }); });
  })(0);
})`

// BenchmarkZoomRedraw opens the report $SNAPVIEW_ZOOM_PAGE names in
// headless Chromium (chromedp, no network) and zooms its first timeline
// from the whole trace to windows of 10%, 1% and 0.1% of it around the
// middle, b.N times each: the metric ms/redraw is the median time from
// the dataZoom action to the second animation frame after the page redrew
// (scripts/zoomredraw.sh runs it; docs/benchmarks.md has figures).
func BenchmarkZoomRedraw(b *testing.B) {
	page := os.Getenv(zoomBenchEnv)
	if page == "" {
		b.Skip("set " + zoomBenchEnv + " to a report (scripts/zoomredraw.sh)")
	}
	bin := findChromium()
	if bin == "" {
		b.Skip("chromium not found")
	}
	ctx := browserContext(b, bin)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitReady(chromedp.CSS(`html[data-charts]`))); err != nil {
		b.Fatalf("opening %s: %v", page, err)
	}
	// The multi-resolution index is read after the first paint.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`(function () {
  var d = JSON.parse(document.getElementById("snapview-data").textContent).devices.filter(function (d) { return d.timeline; })[0];
  return !d || !d.detail || document.documentElement.getAttribute("data-detail") === "1";
})()`, chromedp.WithPollingTimeout(browserPageWait))); err != nil {
		b.Fatal(err)
	}
	type result struct {
		MS                   float64
		Level, Rows, Singles string
		// Redraw is report.js's own time in its redraw (data-zoom-ms).
		Redraw string
	}
	zoom := func(start, end float64, wait bool) result {
		r, err := chromedp.Run(ctx, chromedp.Evaluate[result](fmt.Sprintf(zoomRedrawJS, start, end, wait), chromedp.EvalAwaitPromise))
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	for _, w := range []float64{10, 1, 0.1} {
		b.Run(fmt.Sprintf("window=%g%%", w), func(b *testing.B) {
			var ms []float64
			var own []string
			var last result
			for b.Loop() {
				zoom(0, 100, false)
				last = zoom(50-w/2, 50+w/2, true)
				ms = append(ms, last.MS)
				own = append(own, last.Redraw)
			}
			slices.Sort(ms)
			b.ReportMetric(ms[len(ms)/2], "ms/redraw")
			b.Logf("window %g%%: level %s, %s rows, %s single allocations; each %v ms (report.js's redraw %v ms)", w, last.Level, last.Rows, last.Singles, ms, own)
		})
	}
}

// browserContext starts headless Chromium (bin) with the network cut and
// returns a tab's context, ended with tb.
func browserContext(tb testing.TB, bin string) context.Context {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.WindowSize(1400, 1000), chromedp.UserDataDir(tb.TempDir()),
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
		chromedp.Flag("disable-quic", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tb.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	tb.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("starting %s: %v", bin, err)
	}
	return ctx
}
