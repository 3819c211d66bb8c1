package monitor

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func texts(lines [][]byte) []string {
	var out []string
	for _, l := range lines {
		out = append(out, string(l))
	}
	return out
}

// TestFollowerFile: partial last lines wait for their newline; a file
// truncated or replaced (rotated) is read again from its start, with a
// warning; an over-long line is dropped with a warning.
func TestFollowerFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	appendFile(t, path, "a\nb")
	fl, err := FollowFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	poll := func(want string, wantWarn string) Batch {
		t.Helper()
		b, err := fl.Poll()
		lines, warns := b.Lines, b.Warnings
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(texts(lines), "|"); got != want {
			t.Errorf("lines %q, want %q", got, want)
		}
		if got := strings.Join(warns, "|"); !strings.Contains(got, wantWarn) || (wantWarn == "" && got != "") {
			t.Errorf("warnings %q, want %q", got, wantWarn)
		}
		return b
	}
	if b := poll("a", ""); b.Restart != -1 {
		t.Errorf("Restart %d without a restart, want -1", b.Restart)
	}
	poll("", "")
	appendFile(t, path, "c\nd\n")
	poll("bc|d", "")
	// Truncated and rewritten, shorter than what was read.
	if err := os.WriteFile(path, []byte("e\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b := poll("e", "shrank"); b.Restart != 0 || b.Rotated {
		t.Errorf("truncated: Restart %d, Rotated %v; want 0, false", b.Restart, b.Rotated)
	}
	// Rotated: the old file renamed away with a last line, a new one made.
	appendFile(t, path, "f\n")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, path+".1", "g\n")
	appendFile(t, path, "h\n")
	// The new file starts at h.
	if b := poll("f|g|h", "rotated"); b.Restart != 2 || !b.Rotated {
		t.Errorf("rotated: Restart %d, Rotated %v; want 2, true", b.Restart, b.Rotated)
	}
	appendFile(t, path, strings.Repeat("x", FollowMaxLine+10)+"\ni\n")
	poll("i", "longer than")
}

// TestFollowerReader: a pipe is read in the background to its end; its
// last line is delivered without a newline.
func TestFollowerReader(t *testing.T) {
	pr, pw := io.Pipe()
	fl := FollowReader(pr)
	go func() {
		pw.Write([]byte("a\nb"))
		pw.Write([]byte("c\nd"))
		pw.Close()
	}()
	var got []string
	for !fl.Done() {
		b, err := fl.Poll()
		lines := b.Lines
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, texts(lines)...)
	}
	if strings.Join(got, "|") != "a|bc|d" {
		t.Errorf("lines %q, want a, bc, d", got)
	}
}

// TestWatchRules judges the rules record by record on a real log
// (testdata/snapshots/monitor_train.stats.jsonl: allocated memory keeps
// 4 MiB a step from step 10): the climb triggers at the first step the
// stats view would call a climb, and bad lines are warnings.
func TestWatchRules(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "snapshots", "monitor_train.stats.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	w := &Watch{Rules: []StopRule{{Kind: StopClimb}}}
	warns := w.AddStatsLines([][]byte{[]byte("{garbage"), []byte(`{"step": 1, "allocated_bytes.all.current": "x"}`)}, true)
	if len(warns) != 2 || len(w.Stats.Records) != 0 {
		t.Fatalf("warnings %q, records %d: want 2 warnings and no record", warns, len(w.Stats.Records))
	}
	first := -1
	for i, l := range lines {
		w.AddStatsLines([][]byte{[]byte(l)}, true)
		if w.Triggered != nil {
			first = i
			break
		}
	}
	if first < 0 {
		t.Fatal("the climb never triggered")
	}
	// The same prefix judged by the stats view: climbing; one record
	// less: not.
	for _, n := range []int{first + 1, first} {
		l, err := ParseStatsLog(strings.NewReader(strings.Join(lines[:n], "\n")))
		if err != nil {
			t.Fatal(err)
		}
		d := AnalyzeSteps(l)[0]
		if got := d.Allocated.Climbing || d.Reserved.Climbing; got != (n == first+1) {
			t.Errorf("stats over %d records: climbing %v", n, got)
		}
	}
	if got := w.Stats.Records[w.Triggered.Record].Step; got != w.Stats.Records[len(w.Stats.Records)-1].Step || got < 10 || got > 16 {
		t.Errorf("triggered at step %d, want shortly after the climb starts at step 10", got)
	}
	// Limit, retries and OOM rules.
	w2 := &Watch{Rules: []StopRule{{Kind: StopLimit, Limit: 300 << 20}}}
	w2.AddStatsLines([][]byte{[]byte(lines[0]), []byte(lines[len(lines)-1])}, false)
	if w2.Triggered == nil || w2.Triggered.Value != 314<<20 {
		t.Errorf("limit 300 MiB: %+v, want a trigger at 314 MiB reserved", w2.Triggered)
	}
	w3 := &Watch{Rules: []StopRule{{Kind: StopRetries}, {Kind: StopOOM}}}
	retry := strings.Replace(strings.Replace(lines[1], `"num_alloc_retries": 0`, `"num_alloc_retries": 2`, 1), `"step": 1,`, `"step": 2,`, 1)
	if retry == lines[1] {
		t.Fatal("no num_alloc_retries in the log's line")
	}
	if warns := w3.AddStatsLines([][]byte{[]byte(lines[0]), []byte(retry)}, true); len(warns) > 0 {
		t.Fatal(warns)
	}
	if w3.Triggered == nil || w3.Triggered.Rule.Kind != StopRetries || w3.Triggered.Record != 1 {
		t.Errorf("retries: %+v, want a trigger at the second record", w3.Triggered)
	}
}
