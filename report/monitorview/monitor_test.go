package monitorview

import (
	"bytes"
	"os"
	"path/filepath"
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

// TestLastRecords: summary of a memory_stats() log shows the last record
// of each device and says which ("the last record, step 29, line 30" for
// one device).
func TestLastRecords(t *testing.T) {
	_, l := monitorTrainLogs(t)
	d := LastRecords("train.jsonl", l)
	if d.File != "train.jsonl" || len(d.Stats) != 1 || d.From != "the last record, step 29, line 30" {
		t.Errorf("LastRecords = %+v, want device 0's record of step 29", d)
	}
	two := &monitor.StatsLog{Records: append(append([]monitor.StatsRecord{}, l.Records...), l.Records[len(l.Records)-1])}
	two.Records[len(two.Records)-1].Stats = &stats.MemoryStats{Device: 1}
	two.Records[len(two.Records)-1].Line = 31
	if d := LastRecords("x", two); len(d.Stats) != 2 || d.From != "the last record: device 0: step 29, line 30; device 1: step 29, line 31" {
		t.Errorf("two devices: From = %q, %d stats", d.From, len(d.Stats))
	}
}
