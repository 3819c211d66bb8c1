package monitor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWatchPollRestart: a followed memory_stats() log that is truncated
// is a new run: the records read before are set aside, with a warning
// that says so, and the new records and lines are numbered from 1 (the
// line a trigger names is a line of the file as it is). A rotated log is
// the same run in a new file: its records are kept, lines numbered in the
// new file.
func TestWatchPollRestart(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "snapshots", "monitor_train.stats.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	recs := strings.SplitAfter(strings.TrimSpace(string(b)), "\n")
	path := filepath.Join(t.TempDir(), "stats.jsonl")
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(recs[:5]...)
	l, err := OpenWatchLog(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	w := &Watch{}
	poll := func(first bool) string {
		t.Helper()
		p, err := w.Poll([]*WatchLog{l}, first, false)
		if err != nil {
			t.Fatal(err)
		}
		var warns []string
		for _, m := range p.Warnings {
			warns = append(warns, m.Text)
		}
		return strings.Join(warns, "|")
	}
	lines := func() (out []int) {
		for _, r := range w.Stats.Records {
			out = append(out, r.Line)
		}
		return out
	}
	if warns := poll(true); warns != "" || len(w.Stats.Records) != 5 {
		t.Fatalf("first poll: %d records, warnings %q; want 5, none", len(w.Stats.Records), warns)
	}
	// The run starts again and truncates its log: two records of the new
	// run, shorter than what was read.
	write(recs[:2]...)
	warns := poll(false)
	if !strings.Contains(warns, "shrank") || !strings.Contains(warns, "a new run: the 5 records read before are set aside, and records and lines are numbered from 1 again") {
		t.Errorf("after truncation: warnings %q, want the shrink and the new run", warns)
	}
	if got := lines(); len(got) != 2 || got[0] != 1 || got[1] != 2 || w.StatsSetAside != 5 {
		t.Errorf("after truncation: record lines %v, %d set aside; want [1 2], 5", got, w.StatsSetAside)
	}
	// Rotated: a new file at the path, the records kept.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	write(recs[2:4]...)
	warns = poll(false)
	if !strings.Contains(warns, "rotated") || !strings.Contains(warns, "the 2 records read so far are kept") {
		t.Errorf("after rotation: warnings %q", warns)
	}
	if got := lines(); len(got) != 4 || got[2] != 1 || got[3] != 2 || w.StatsSetAside != 5 {
		t.Errorf("after rotation: record lines %v, %d set aside; want [1 2 1 2], 5", got, w.StatsSetAside)
	}
}
