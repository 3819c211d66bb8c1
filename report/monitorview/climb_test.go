package monitorview

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
)

// TestClimbNamesItsFigures: in every climb sentence (stats, watch's stop,
// nvidia-smi) the record named as the start is the first new high, and
// the record named as the one the rise is from holds the first figure of
// the range: on the real monitor_train logs, step 9 (161.1 MiB) before
// the allocated climb of step 10 (165.1 MiB), step 10 (234.0 MiB) before
// the reserved climb of step 11 (250.0 MiB), 14:45:31.837 (1499 MiB)
// before nvidia-smi's of 14:45:31.937 (1515 MiB).
func TestClimbNamesItsFigures(t *testing.T) {
	smi, log := monitorTrainLogs(t)
	d := &monitor.AnalyzeSteps(log)[0]
	stepRe := regexp.MustCompile(`started at step (\d+); \+\S+ MiB from step (\d+), the record before it, to step \d+ \(([^→]+) → `)
	for _, c := range []struct {
		what  string
		climb monitor.Climb
		value func(*stats.MemoryStats) int64
	}{
		{"allocated memory", d.Allocated, func(s *stats.MemoryStats) int64 { return s.AllocatedBytes[stats.PoolAll].Current }},
		{"reserved memory", d.Reserved, func(s *stats.MemoryStats) int64 { return s.ReservedBytes[stats.PoolAll].Current }},
	} {
		s := ClimbVerdict(d, c.climb, c.what)
		m := stepRe.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("%s: %q names no start and base step", c.what, s)
		}
		byStep := map[string]int64{}
		for _, r := range d.Records {
			byStep[strconv.FormatInt(r.Step, 10)] = c.value(r.Stats)
		}
		start, base := byStep[m[1]], byStep[m[2]]
		if n, _ := strconv.Atoi(m[1]); strconv.Itoa(n-1) != m[2] {
			t.Errorf("%s: base step %s is not the one before the start, step %s", c.what, m[2], m[1])
		}
		if units.Bytes(base) != m[3] || start <= base {
			t.Errorf("%s: %q: step %s holds %s, step %s %s; want the range to start at the base's figure, below the start's",
				c.what, s, m[2], units.Bytes(base), m[1], units.Bytes(start))
		}
	}
	w := &WatchView{W: &monitor.Watch{Stats: *log, Triggered: &monitor.Trigger{Rule: monitor.StopRule{Kind: monitor.StopClimb},
		Device: 0, Record: len(d.Records) - 1, What: "allocated", Climb: d.Allocated}}}
	if got, want := TriggerText(w), "allocated memory keeps climbing since step 10: +80.0 MiB from step 9, the record before it (161.1 MiB → 241.1 MiB)"; !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(got) {
		t.Errorf("TriggerText = %q, want it to hold %q", got, want)
	}

	g := &monitor.SummarizeSMI(smi)[0]
	s := SMIClimbVerdict(g, time.UTC)
	m := regexp.MustCompile(`started at (\S+) .*; \+\S+ MiB from (\S+), the sample before it, to the end \((\S+ MiB) → `).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("nvidia-smi: %q names no start and base sample", s)
	}
	at := func(clk string) (int64, bool) {
		for _, p := range g.Series {
			if clock(p.TimeUS, time.UTC) == clk {
				return p.Used, true
			}
		}
		return 0, false
	}
	start, ok1 := at(m[1])
	base, ok2 := at(m[2])
	if !ok1 || !ok2 || bytesRange(base, start)[:len(m[3])] != m[3] || start <= base {
		t.Errorf("nvidia-smi: %q: sample %s holds %d, %s %d; want the range to start at the base's figure, below the start's", s, m[2], base, m[1], start)
	}
}
