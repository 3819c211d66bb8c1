package monitor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

// zeros is an endless reader of zero bytes, as /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestReadLog: ReadLog returns what a reader holds, and stops a line with
// no break and an endless stream at their bounds.
func TestReadLog(t *testing.T) {
	text := strings.Repeat("a,b,c\n", 100_000) + "last"
	b, err := readLog(iotest.HalfReader(strings.NewReader(text)), 64, 1<<20)
	if err != nil || string(b) != text {
		t.Fatalf("readLog = %d bytes, %v; want the %d bytes", len(b), err, len(text))
	}
	for _, tt := range []struct {
		name  string
		r     io.Reader
		limit string
		line  int
	}{
		{"zeros", zeros{}, "line length", 1},
		{"long third line", io.MultiReader(strings.NewReader("a\nb\n"), zeros{}), "line length", 3},
		{"endless lines", endlessLines{}, "log size", 0},
	} {
		_, err := readLog(tt.r, 1<<16, 1<<22)
		var le *LogLimitError
		if !errors.As(err, &le) || le.Limit != tt.limit || le.Line != tt.line {
			t.Errorf("%s: err %v, want the %s limit at line %d", tt.name, err, tt.limit, tt.line)
		}
	}
}

// endlessLines is an endless reader of short lines.
type endlessLines struct{}

func (endlessLines) Read(p []byte) (int, error) {
	return copy(p, bytes.Repeat([]byte("0,0,0\n"), len(p)/6+1)), nil
}

// paddedLog is a JSON Lines memory_stats() log of lines copies of rec
// (one JSON object), each padded with pad spaces, made as it is read.
type paddedLog struct {
	rec        []byte
	lines, pad int
	n          int
	buf        []byte
	sample     bool   // whether to note the heap at each Read
	peak       uint64 // the most heap in use seen at a Read
}

func (g *paddedLog) Read(p []byte) (int, error) {
	if g.sample {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		g.peak = max(g.peak, ms.HeapAlloc)
	}
	for len(g.buf) == 0 {
		if g.n == g.lines {
			return 0, io.EOF
		}
		g.buf = fmt.Appendf(nil, `{"step": %d, %s%s`+"\n", g.n, g.rec[1:], strings.Repeat(" ", g.pad))
		g.n++
	}
	k := copy(p, g.buf)
	g.buf = g.buf[k:]
	return k, nil
}

// recordWithoutStep is the first record of the real monitor_train log
// without its "step", as one line of JSON.
func recordWithoutStep(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "snapshots", "monitor_train.stats.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	rec, _, _ := bytes.Cut(b, []byte("\n"))
	var obj map[string]any
	if err := json.Unmarshal(rec, &obj); err != nil {
		t.Fatal(err)
	}
	delete(obj, "step")
	rec, _ = json.Marshal(obj)
	return rec
}

// TestParseStatsLogStreams: ParseStatsLog holds a line at a time, not the
// log: 96 MiB of log in 1 MiB lines is read with the heap under 24 MiB
// (reading it whole took the log's size and more).
func TestParseStatsLogStreams(t *testing.T) {
	rec := recordWithoutStep(t)
	runtime.GC()
	g := &paddedLog{rec: rec, lines: 96, pad: 1 << 20, sample: true}
	l, err := ParseStatsLog(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Records) != 96 || l.Records[95].Step != 95 {
		t.Fatalf("%d records, want 96", len(l.Records))
	}
	t.Logf("96 MiB log: peak heap %.1f MiB", float64(g.peak)/(1<<20))
	if g.peak > 24<<20 {
		t.Errorf("peak heap %.1f MiB reading a 96 MiB log; want under 24 MiB (a line at a time)", float64(g.peak)/(1<<20))
	}
	// A log past MaxLogBytes in lines under MaxLogLine ends in the log
	// size limit, as ReadLog's.
	_, err = ParseStatsLog(&paddedLog{rec: rec, lines: MaxLogBytes>>20 + 1, pad: 1 << 20})
	var le *LogLimitError
	if !errors.As(err, &le) || le.Limit != "log size" {
		t.Errorf("a log of %d MiB: err %v, want the log size limit", MaxLogBytes>>20+1, err)
	}
}

// TestLoadStatsLogStreams: LoadStatsLog, which `snapview stats`, check,
// smi and report read a log with, streams it as ParseStatsLog does, from
// a file or standard input: 48 MiB of log in 16 KiB lines (3,072
// records of about 1 KiB each, held) with the heap under 24 MiB (it read the log whole before: 421 MB RSS for `stats` on
// a 99 MB log, 85 MB after).
func TestLoadStatsLogStreams(t *testing.T) {
	rec := recordWithoutStep(t)
	runtime.GC()
	g := &paddedLog{rec: rec, lines: 3072, pad: 16 << 10, sample: true}
	name, l, _, err := LoadStatsLog(StdinPath, g)
	if err != nil {
		t.Fatal(err)
	}
	if name != StdinName || len(l.Records) != 3072 || l.Records[3071].Step != 3071 {
		t.Fatalf("%s: %d records, want 3072", name, len(l.Records))
	}
	t.Logf("48 MiB log: peak heap %.1f MiB", float64(g.peak)/(1<<20))
	if g.peak > 24<<20 {
		t.Errorf("peak heap %.1f MiB loading a 48 MiB log; want under 24 MiB (a line at a time)", float64(g.peak)/(1<<20))
	}
}
