package snapshot

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
)

func TestMemoryStatsFile(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"memory_stats", `{"allocated_bytes.all.current": 1, "allocated_bytes.all.peak": 2, "num_alloc_retries": 0, "num_ooms": 0}`, true},
		{"two keys", `{"allocated_bytes.all.current": 1, "num_ooms": 0}`, false},
		{"mostly other keys", `{"allocated_bytes.all.current": 1, "num_ooms": 0, "num_alloc_retries": 0, "a": 1, "b": 2, "c": 3, "d": 4}`, false},
	}
	for _, tt := range tests {
		_, err := Decode(bytes.NewReader([]byte(tt.in)))
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		if got := errors.Is(err, ErrMemoryStats); got != tt.want {
			t.Errorf("%s: errors.Is(%v, ErrMemoryStats) = %v, want %v", tt.name, err, got, tt.want)
		}
		if !errors.Is(err, ErrNotSnapshot) {
			t.Errorf("%s: %v does not wrap ErrNotSnapshot", tt.name, err)
		}
		if tt.want && (!strings.Contains(err.Error(), "summary --format torch") || strings.Contains(err.Error(), "\n")) {
			t.Errorf("%s: message %q should name summary --format torch, on one line", tt.name, err)
		}
	}
	// The stats.json files of the shared corpus.
	for _, f := range corpus.Glob(t, "torch2.11/*/stats.json", 16) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Decode(bytes.NewReader(b)); !errors.Is(err, ErrMemoryStats) {
			t.Errorf("%s: %v, want ErrMemoryStats", f, err)
		}
	}
}

// TestFrameLineUnknown checks that a frame line of 2^64-1 (-1 written
// unsigned by PyTorch's unwinder) reads as -1 without a warning.
func TestFrameLineUnknown(t *testing.T) {
	f := corpus.Path(t, "torch2.11-probe/annotations.pickle")
	s, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range s.Warnings {
		if strings.Contains(w, "18446744073709551615") {
			t.Errorf("warning %q", w)
		}
	}
	unknown := 0
	for _, fr := range s.Frames {
		if fr.Line == -1 {
			unknown++
		}
	}
	if unknown == 0 {
		t.Error("no frame with line -1")
	}
}
