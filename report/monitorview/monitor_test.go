package monitorview

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/monitortest"
)

const monitorTrainBase = "../../testdata/snapshots/monitor_train"

// monitorTrainLogs reads the real monitor_train recording's logs.
func monitorTrainLogs(t *testing.T) (*monitor.SMILog, *monitor.StatsLog) {
	return monitortest.TrainLogs(t, monitorTrainBase)
}

// TestMonitorTextGolden writes the text views of the real monitor_train
// logs: the memory_stats() dump, the per-step log and the nvidia-smi log
// with its gap (go test -update rewrites the golden files).
func TestMonitorTextGolden(t *testing.T) {
	b, err := os.ReadFile(monitorTrainBase + ".stats.json")
	if err != nil {
		t.Fatal(err)
	}
	stats, err := stats.ParseStatsJSON(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteStatsDumpText(&buf, &StatsDump{File: "monitor_train.stats.json", Stats: stats}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "monitor_train.stats.txt"), buf.String())

	smi, log := monitorTrainLogs(t)
	steps := monitor.AnalyzeSteps(log)
	buf.Reset()
	if err := WriteStepsText(&buf, &StepsView{File: "monitor_train.stats.jsonl", Devices: steps, Rows: 12}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "monitor_train.steps.txt"), buf.String())

	v := &SMIView{File: "monitor_train.smi.csv", Rows: len(smi.Samples), Loc: time.UTC, GPUs: monitor.SummarizeSMI(smi)}
	v.Gaps = []GapView{{GPU: 0, Device: 0, Against: "reserved_bytes.all.current of monitor_train.stats.jsonl",
		Gap: monitor.FindGap(v.GPUs[0].Series, steps[0].ReservedSeries()), StepAt: StepAt(&steps[0], time.UTC)}}
	buf.Reset()
	if err := WriteSMIText(&buf, v); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "monitor_train.smi.txt"), buf.String())
}

// TestWatchFrameSetAside: after its log was truncated (a new run), the
// watch view says the records are counted from the new run's start, and
// how many were set aside; the warnings kept are the latest five.
func TestWatchFrameSetAside(t *testing.T) {
	_, log := monitorTrainLogs(t)
	w := &monitor.Watch{Stats: monitor.StatsLog{Records: log.Records[:2]}, StatsSetAside: 30}
	v := &WatchView{StatsFile: "train.jsonl", W: w}
	for i := range 7 {
		v.AddWarning(fmt.Sprintf("train.jsonl: warning %d", i))
	}
	var buf bytes.Buffer
	if err := WriteWatchFrame(&buf, v); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if want := "train.jsonl: 2 records since the log was truncated (a new run, numbered from 1; 30 before it set aside)\n"; !strings.Contains(out, want) {
		t.Errorf("frame:\n%s\nwant the line %q", out, want)
	}
	if strings.Contains(out, "warning 1\n") || !strings.Contains(out, "warning: train.jsonl: warning 2\n") || !strings.Contains(out, "warning 6\n") {
		t.Errorf("frame:\n%s\nwant warnings 2 to 6", out)
	}
	w.StatsSetAside = 0
	buf.Reset()
	if err := WriteWatchFrame(&buf, v); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "train.jsonl: 2 records\n") {
		t.Errorf("frame without a truncation:\n%s", buf.String())
	}
}
