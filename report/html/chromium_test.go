package html

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

var (
	htmlLargeSnapshot = flag.String("large_snapshot", "", "path of a big snapshot (e.g. the decompressed gpt2_2M_events) to render in TestHTMLInChromium")
	htmlScreenshots   = flag.String("screenshots", "", "directory where TestHTMLInChromium leaves a screenshot of each report")
)

// findChromium returns the path of a Chromium or Chrome binary, or "".
func findChromium() string {
	if p := os.Getenv("SNAPVIEW_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// runChromium opens page in headless Chromium with the network cut (a
// proxy on the discard port and no name resolution) and returns its
// standard output and the console messages it logged.
func runChromium(t *testing.T, bin, page string, extra ...string) (stdout string, console []string) {
	t.Helper()
	args := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--mute-audio",
		"--user-data-dir=" + t.TempDir(),
		"--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--host-resolver-rules=MAP * ~NOTFOUND",
		"--enable-logging=stderr", "--v=0",
	}
	args = append(args, extra...)
	args = append(args, "file://"+page)
	// No timeout: a browser that never exits is left to go test's
	// -timeout, and how long it takes on a loaded machine is no test.
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, errOut.String())
	}
	for _, line := range strings.Split(errOut.String(), "\n") {
		// "[pid:tid:time:INFO:CONSOLE:12] "message", source: file:///... (12)"
		// (older builds write CONSOLE(12)); net::ERR_ lines are requests
		// that failed.
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "net::ERR_") {
			console = append(console, line)
		}
	}
	return out.String(), console
}

// htmlTipScript, added to a copy of a report, opens the tooltip of each
// chart (the timeline at its highest allocated point, the first block of
// the segments) so that the formatters run and the screenshot shows them.
const htmlTipScript = `<script>
(function () {
  var shown = 0;
  // The inspection panel first (it redraws the segment map): the state
  // after entry 1 of device 0.
  document.documentElement.setAttribute("data-inspect", String(window.snapviewShowEntry(0, 1)));
  document.querySelectorAll("[id^=timeline_d], [id^=segments_d]").forEach(function (el) {
    var c = echarts.getInstanceByDom(el);
    if (!c) { return; }
    var rows = c.getOption().dataset[0].source, at = 0;
    if (el.id.indexOf("timeline") === 0) {
      for (var i = 0; i < rows.length; i++) { if (rows[i][4] > rows[at][4]) { at = i; } }
    }
    c.dispatchAction({type: "showTip", seriesIndex: 0, dataIndex: at});
    shown++;
  });
  document.documentElement.setAttribute("data-tips", String(shown));
})();
</script>
</body>`

var (
	chartsAttrRE = regexp.MustCompile(`data-charts="(\d+)"`)
	readyAttrRE  = regexp.MustCompile(`data-ready-ms="(\d+)"`)
)

// TestHTMLInChromium renders reports of real snapshots in headless
// Chromium with no network and checks that the script ran without error
// and drew every chart.
func TestHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := findChromium()
	if bin == "" {
		t.Skip("chromium not found (apt-get install chromium, or set SNAPVIEW_CHROMIUM): skipping the browser test")
	}
	type tc struct {
		name, path string
		maxBytes   int
		want       []string
	}
	common := []string{"<h2>What the file holds</h2>", "<h2>Device 0</h2>", "Memory timeline</h3>",
		"memory_summary()</h3>", `-state-at">at the peak`, "Live memory and possible leaks</h3>", "PyTorch CUDA memory summary"}
	tests := []tc{
		{"leak_train", corpus.Path(t, "torch2.11/leak_train/snapshot.pickle"), 5 << 20,
			append([]string{`<table class="leaks">`, "snapgen.py:180 leak_train"}, common...)},
		{"oom", corpus.Path(t, "torch2.11/oom/snapshot.pickle"), 5 << 20,
			// The page opens at the OOM's state, under explain's findings.
			append([]string{"1 OOM marked", "OOM at entry", `-state-at">at the OOM`, "What went wrong, and what to do"},
				slices.DeleteFunc(slices.Clone(common), func(s string) bool { return strings.Contains(s, "at the peak") })...)},
		{"two_devices", corpus.Path(t, "torch2.11/two_devices/snapshot.pickle"), 5 << 20,
			append([]string{"<h2>Device 1</h2>"}, common...)},
		{"state_only", corpus.Path(t, "torch2.11/state_only/snapshot.pickle"), 5 << 20,
			[]string{"<h2>Device 0</h2>", "there is nothing to draw over time", `-state-at">at the peak`}},
		{"p34", corpus.Path(t, "public/p34-compile-annotations-1800.pickle"), 5 << 20,
			append([]string{"100 of 901 record_function ranges drawn"}, common...)},
	}
	if *htmlLargeSnapshot != "" {
		tests = append(tests, tc{"large", *htmlLargeSnapshot, 15 << 20, common})
	}
	dir := t.TempDir()

	// The harness itself: a script error and a request that leaves the
	// page must both show up.
	t.Run("harness", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.html")
		html := `<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'"></head>` +
			`<body><img src="http://198.51.100.1/x.png"><script>snapviewNoSuchFunction();</script></body></html>`
		if err := os.WriteFile(bad, []byte(html), 0o644); err != nil {
			t.Fatal(err)
		}
		_, console := runChromium(t, bin, bad, "--dump-dom")
		all := strings.Join(console, "\n")
		for _, want := range []string{"snapviewNoSuchFunction", "198.51.100.1"} {
			if !strings.Contains(all, want) {
				t.Errorf("console messages do not mention %q; the check would miss it:\n%s", want, all)
			}
		}
	})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.path); err != nil {
				t.Skipf("snapshot not available: %v", err)
			}
			s, err := snapshot.Load(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			r, err := buildHTML(s, Options{Title: tt.name})
			if err != nil {
				t.Fatal(err)
			}
			page := writeHTMLString(t, r)
			if len(page) > tt.maxBytes {
				t.Errorf("report is %d bytes, want at most %d", len(page), tt.maxBytes)
			}
			charts := 0
			for _, d := range r.Devices {
				if d.Timeline != nil && len(d.Timeline.Index) > 0 {
					charts++
				}
				if len(d.Segments) > 0 {
					charts++
				}
			}
			file := filepath.Join(dir, tt.name+".html")
			if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}

			dom, console := runChromium(t, bin, file, "--dump-dom", "--window-size=1400,1800")
			for _, line := range console {
				t.Errorf("console: %s", line)
			}
			m := chartsAttrRE.FindStringSubmatch(dom)
			if m == nil {
				t.Fatal("report.js did not finish (no data-charts attribute): a script error stopped it")
			}
			if got, _ := strconv.Atoi(m[1]); got != charts {
				t.Errorf("report.js drew %d charts, want %d", got, charts)
			}
			if n := strings.Count(dom, "<canvas"); n < charts {
				t.Errorf("%d canvas elements, want at least %d", n, charts)
			}
			for _, want := range tt.want {
				if !strings.Contains(dom, want) {
					t.Errorf("rendered page lacks %q", want)
				}
			}
			if m := readyAttrRE.FindStringSubmatch(dom); m != nil {
				t.Logf("%s: %d bytes, charts drawn %s ms after navigation", tt.name, len(page), m[1])
			}

			// Tooltips: open one per chart in a copy of the page.
			tipFile := filepath.Join(dir, tt.name+".tip.html")
			end := strings.LastIndex(page, "</body>") // the bundle holds one too
			if err := os.WriteFile(tipFile, []byte(page[:end]+htmlTipScript+page[end+len("</body>"):]), 0o644); err != nil {
				t.Fatal(err)
			}
			dom, console = runChromium(t, bin, tipFile, "--dump-dom", "--window-size=1400,1800")
			for _, line := range console {
				t.Errorf("console (tooltips): %s", line)
			}
			if want := fmt.Sprintf(`data-tips="%d"`, charts); !strings.Contains(dom, want) {
				t.Errorf("tooltip script did not finish: want %s", want)
			}
			wantTips := []string{`class="tt-head"`, ">allocated<", ">reserved<", ">block<"}
			if r.Devices[0].Timeline != nil {
				// The state after entry 1, in the panel.
				panel := `-state-at">after entry 1 (clicked on the timeline)`
				if !r.Devices[0].Inspect.Live {
					panel = "(the precomputed state nearest to entry 1)"
				}
				wantTips = append(wantTips, `data-inspect="true"`, panel)
			}
			if r.Devices[0].Timeline == nil {
				wantTips = []string{`data-inspect="false"`, ">block<"}
			}
			for _, want := range wantTips {
				if !strings.Contains(dom, want) {
					t.Errorf("open tooltips lack %q", want)
				}
			}

			if *htmlScreenshots != "" {
				if err := os.MkdirAll(*htmlScreenshots, 0o755); err != nil {
					t.Fatal(err)
				}
				shot, err := filepath.Abs(filepath.Join(*htmlScreenshots, tt.name+".png"))
				if err != nil {
					t.Fatal(err)
				}
				_, console := runChromium(t, bin, tipFile, "--screenshot="+shot, "--hide-scrollbars", "--window-size=1400,3400")
				for _, line := range console {
					t.Errorf("console (screenshot run): %s", line)
				}
				if st, err := os.Stat(shot); err != nil || st.Size() < 10_000 {
					t.Errorf("screenshot %s missing or blank: %v", shot, err)
				} else {
					t.Logf("screenshot: %s", shot)
				}
			}
		})
	}
}
