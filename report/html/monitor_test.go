package html

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/internal/monitortest"
	"github.com/snapview/snapview/snapshot"
)

const monitorTrainBase = "../../testdata/snapshots/monitor_train"

// monitorTrainLogs reads the real monitor_train recording's logs.
func monitorTrainLogs(t *testing.T) (*monitor.SMILog, *monitor.StatsLog) {
	return monitortest.TrainLogs(t, monitorTrainBase)
}

// monitorTrainReport builds the report of the real monitor_train recording
// with its nvidia-smi and memory_stats() logs.
func monitorTrainReport(t *testing.T) *Report {
	t.Helper()
	s, err := snapshot.Load(monitorTrainBase + ".pickle")
	if err != nil {
		t.Fatal(err)
	}
	smi, log := monitorTrainLogs(t)
	in := &MonitorInput{SMI: monitor.SummarizeSMI(smi), SMIName: "smi.csv", Loc: time.UTC, Stats: monitor.AnalyzeSteps(log), StatsName: "stats.jsonl"}
	r, err := buildHTML(s, Options{Title: "monitor_train", Devices: []int{0}, Monitor: in})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuildHTMLMonitor(t *testing.T) {
	m := monitorTrainReport(t).Devices[0].Monitor
	if m == nil {
		t.Fatal("no monitoring section")
	}
	const mib = 1 << 20
	// The CuPy buffer (meta.json: 512 MiB at step 5) is the one jump of
	// 512 MiB; the first is the first step's libraries.
	var jumps []int64
	for _, j := range m.Jumps {
		jumps = append(jumps, j.Bytes/mib)
	}
	if len(jumps) != 2 || jumps[1] != 512 {
		t.Errorf("gap jumps %v MiB, want two, the second 512", jumps)
	}
	if len(m.Used) != 120 || len(m.Overlay) == 0 || len(m.Overlay) >= len(m.Used) || len(m.StepAllocated) != 30 || len(m.Steps) != 30 {
		t.Errorf("%d used samples, %d overlaid, %d step points, %d step rows", len(m.Used), len(m.Overlay), len(m.StepAllocated), len(m.Steps))
	}
	notes := strings.Join(m.Notes, "\n")
	for _, want := range []string{"least 527.0 MiB", "by the end of step 5",
		"The memory_stats() log and the snapshot agree: at 30 of 30 records within the trace", "Allocated memory (memory_stats() log) keeps climbing: it started at step 10"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if len(m.Warnings) != 0 {
		t.Errorf("warnings: %q", m.Warnings)
	}
	// Every point of the gap is used minus reserved at the same time: at
	// least the context, never more than used.
	for i, p := range m.Gap {
		if p[1] < 500*mib || p[1] > 2048*mib {
			t.Errorf("gap point %d = %v", i, p)
			break
		}
	}
}

// TestMonitorInChromium draws the monitoring chart and the overlay in
// headless Chromium: no console message, and an ECharts instance in the
// monitoring chart's container.
func TestMonitorInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the browser test in -short mode")
	}
	bin := findChromium()
	if bin == "" {
		t.Skip("chromium not found (apt-get install chromium, or set SNAPVIEW_CHROMIUM): skipping the browser test")
	}
	var buf bytes.Buffer
	if err := Write(&buf, monitorTrainReport(t)); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "monitor.html")
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, console := runChromium(t, bin, page, "--dump-dom", "--window-size=1400,1800")
	for _, line := range console {
		t.Errorf("console: %s", line)
	}
	if m := chartsAttrRE.FindStringSubmatch(dom); m == nil || m[1] != "3" {
		t.Errorf("charts drawn: %v, want 3 (timeline, segments, monitoring)", m)
	}
	if !regexp.MustCompile(`id="monitor_d0"[^>]*_echarts_instance_|_echarts_instance_[^>]*id="monitor_d0"`).MatchString(dom) {
		t.Error("the monitoring chart was not drawn")
	}
	// nvidia-smi's 1.5 GiB (a 512 MiB CuPy buffer and the CUDA context
	// beside PyTorch's 314 MiB) would squeeze PyTorch's areas into the
	// bottom fifth of a shared axis: it gets its own.
	if !strings.Contains(dom, `data-smi-axis="right"`) {
		t.Error(`the nvidia-smi overlay is not on an axis of its own (data-smi-axis="right")`)
	}
	if *htmlScreenshots != "" {
		shot := filepath.Join(*htmlScreenshots, "monitor_train.png")
		runChromium(t, bin, page, "--screenshot="+shot, "--hide-scrollbars", "--window-size=1400,2400")
		t.Logf("screenshot: %s", shot)
	}
}

// TestMonitorGapIsSMIs: the page's gap is the one `snapview smi
// --snapshot` finds (monitor.Gaps over every device of the file, with a
// replay of its own), to the byte: each sample's gap, and each jump.
func TestMonitorGapIsSMIs(t *testing.T) {
	m := monitorTrainReport(t).Devices[0].Monitor
	s, err := snapshot.Load(monitorTrainBase + ".pickle")
	if err != nil {
		t.Fatal(err)
	}
	smi, log := monitorTrainLogs(t)
	gaps, _, _, err := monitor.Gaps(monitor.SummarizeSMI(smi), monitor.GapOptions{Steps: monitor.AnalyzeSteps(log), Snap: s})
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps) != 1 || gaps[0].Device != 0 {
		t.Fatalf("smi's gaps: %+v, want one for device 0", gaps)
	}
	g := gaps[0].Gap
	// Fewer samples than monitorBuckets: the page keeps every one.
	if len(m.Gap) != len(g.Points) {
		t.Fatalf("page: %d gap points, smi: %d", len(m.Gap), len(g.Points))
	}
	origin := int64(0)
	for i, p := range g.Points {
		if i == 0 {
			origin = p.TimeUS - int64(math.Round(m.Gap[0][0]*1e3))
		}
		if int64(m.Gap[i][1]) != p.Gap || int64(math.Round(m.Gap[i][0]*1e3)) != p.TimeUS-origin {
			t.Errorf("gap point %d: page %v, smi %d bytes at %d µs", i, m.Gap[i], p.Gap, p.TimeUS-origin)
		}
	}
	if len(m.Jumps) != len(g.Jumps) {
		t.Fatalf("page: %d jumps, smi: %d", len(m.Jumps), len(g.Jumps))
	}
	for i, j := range g.Jumps {
		if m.Jumps[i].Bytes != j.Bytes {
			t.Errorf("jump %d: page %d bytes, smi %d", i, m.Jumps[i].Bytes, j.Bytes)
		}
	}
}
