package traceview

import (
	"bytes"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

func loadBundledTrace(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestWriteTraceGolden: the readable listing of the bundled mlp_train
// recording's first entries, and around its peak (entry 89).
func TestWriteTraceGolden(t *testing.T) {
	s := loadBundledTrace(t)
	var b bytes.Buffer
	devs := []TraceDevice{{Device: 0, Filter: TraceFilter{From: 0, To: 11}}}
	if err := WriteTrace(&b, s, devs); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n")
	devs = []TraceDevice{{Device: 0, Filter: TraceFilter{From: 85, To: 92}}}
	if err := WriteTrace(&b, s, devs); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "mlp_train.trace.txt"), b.String())
}

// TestTraceFilters: --addr keeps the entries whose range holds the
// address, --focus those with a matching frame; JSON lists the same
// entries as the text.
func TestTraceFilters(t *testing.T) {
	s := loadBundledTrace(t)
	first := s.Traces[0][0]
	tests := []struct {
		name string
		f    TraceFilter
		keep func(e *snapshot.TraceEntry) bool
	}{
		{"addr", TraceFilter{To: -1, Addr: first.Addr + 10, HasAddr: true}, func(e *snapshot.TraceEntry) bool {
			return e.Action != snapshot.ActionOOM && e.Addr <= first.Addr+10 && first.Addr+10 < e.Addr+snapshot.Addr(max(e.Size, 1))
		}},
		{"focus", TraceFilter{To: -1, Focus: regexp.MustCompile(`adam\.py`)}, func(e *snapshot.TraceEntry) bool {
			for _, fid := range s.Stack(e.Stack) {
				if strings.Contains(s.Frames[fid].Filename, "adam.py") {
					return true
				}
			}
			return false
		}},
	}
	for _, tt := range tests {
		want := 0
		for i := range s.Traces[0] {
			if tt.keep(&s.Traces[0][i]) {
				want++
			}
		}
		if want == 0 {
			t.Fatalf("%s: the test keeps nothing", tt.name)
		}
		var text, js bytes.Buffer
		devs := []TraceDevice{{Device: 0, Filter: tt.f}}
		if err := WriteTrace(&text, s, devs); err != nil {
			t.Fatal(err)
		}
		if err := WriteTraceJSON(&js, s, devs); err != nil {
			t.Fatal(err)
		}
		// Header, column names, then one line per entry.
		if got := strings.Count(text.String(), "\n") - 2; got != want {
			t.Errorf("%s: %d lines, want %d", tt.name, got, want)
		}
		if got := strings.Count(js.String(), `"entry":`); got != want {
			t.Errorf("%s: %d JSON entries, want %d", tt.name, got, want)
		}
	}
}
