package monitorview

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/monitor"
)

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
