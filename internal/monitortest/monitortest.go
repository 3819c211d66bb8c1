// Package monitortest reads the real logs of the monitor_train recording
// (testdata/snapshots/monitor_train.*) for the tests of the packages that
// render them.
package monitortest

import (
	"os"
	"testing"
	"time"

	"github.com/snapview/snapview/analyze/monitor"
)

// TrainLogs reads monitor_train's nvidia-smi log (written in UTC, as its
// meta.json says) and its memory_stats() log; base is the path of the
// recording without extension, relative to the calling test
// ("../testdata/snapshots/monitor_train"). Any error fails t.
func TrainLogs(t testing.TB, base string) (*monitor.SMILog, *monitor.StatsLog) {
	t.Helper()
	f, err := os.Open(base + ".smi.csv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	smi, err := monitor.ParseSMI(f, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.Open(base + ".stats.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	log, err := monitor.ParseStatsLog(g)
	if err != nil {
		t.Fatal(err)
	}
	return smi, log
}
