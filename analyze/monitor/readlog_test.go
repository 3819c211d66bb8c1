package monitor

import (
	"bytes"
	"errors"
	"io"
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
