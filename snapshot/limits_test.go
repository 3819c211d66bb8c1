package snapshot

import (
	"bytes"
	"compress/gzip"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
)

// gzipOf compresses b.
func gzipOf(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// TestLimits: each limit ends in a *LimitError naming it, and a limit
// lifted lets the same input through.
func TestLimits(t *testing.T) {
	head := []byte("\x80\x04}(\x8c\x08segments]\x8c\x0ddevice_traces](]")
	entry := []byte("}(\x8c\x06action\x8c\x05alloc\x8c\x04addrK\x01\x8c\x04sizeM\x00\x02\x8c\x07time_usK\x01ua")
	// 40 MiB of one entry: 2000 times compressed.
	bomb := append(append([]byte{}, head...), bytes.Repeat(entry, 40<<20/len(entry))...)
	bomb = append(bomb, "eu."...)
	gz := gzipOf(t, bomb)
	for _, tt := range []struct {
		name  string
		in    []byte
		lim   Limits
		limit string // "" wants success
	}{
		{"ratio", gz, Limits{}, "decompressed size"},
		{"cap", gz, Limits{MaxDecompressed: 1 << 20}, "decompressed size"},
		{"lifted", gz, Limits{MaxDecompressed: -1}, ""},
		{"string", []byte("\x80\x04\x8d\x00\x00\x00\x10\x00\x00\x00\x00" + strings.Repeat("a", 2<<20)), Limits{MaxString: 1 << 20}, "string length"},
		{"stack", append([]byte("\x80\x04"), bytes.Repeat([]byte("K\x01"), 5000)...), Limits{MaxStack: 4096}, "stack depth"},
		{"marks", append([]byte("\x80\x04"), bytes.Repeat([]byte("("), 5000)...), Limits{MaxStack: 4096}, "stack depth"},
		{"memo spread", memoSpread(400), Limits{}, "decoded-object budget"},
		{"entry references", entryRefs(1 << 20), Limits{ObjectBudget: 1 << 20}, "decoded-object budget"},
		{"memory", entryRefs(1 << 18), Limits{MaxMemory: 4 << 20}, "memory"},
		{"memory below the base", entryRefs(1 << 16), Limits{MaxMemory: 1 << 20}, "memory"},
		{"memory room", entryRefs(1 << 18), Limits{MaxMemory: 64 << 20}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeLimits(bytes.NewReader(tt.in), tt.lim)
			var le *LimitError
			switch {
			case tt.limit == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.limit == "":
			case !errors.As(err, &le):
				t.Fatalf("error %v, want a *LimitError", err)
			case le.Limit != tt.limit:
				t.Errorf("limit %q, want %q (%v)", le.Limit, tt.limit, err)
			case strings.Contains(err.Error(), "\n"):
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

// memoSpread is a pickle that stores to memo indexes 65535 apart: a
// chunk of memo slots (256 KB) for each.
func memoSpread(n int) []byte {
	b := []byte("\x80\x04}")
	for i := 1; i <= n; i++ {
		k := uint32(i * 65535)
		b = append(b, 'r', byte(k), byte(k>>8), byte(k>>16), byte(k>>24))
	}
	return append(b, '.')
}

// entryRefs appends one memoized trace entry n times with BINGET.
func entryRefs(n int) []byte {
	b := []byte("\x80\x04}(\x8c\x08segments]\x8c\x0ddevice_traces](]")
	b = append(b, "}(\x8c\x06action\x8c\x05alloc\x8c\x04addrK\x01\x8c\x04sizeM\x00\x02uq\x07a"...)
	b = append(b, bytes.Repeat([]byte("h\x07a"), n)...)
	return append(b, "eu."...)
}

// TestInconsistentSegments: the shared hostile files' duplicate,
// overlapping, wrapping and requested>size segments and backwards times
// are each one warning, and reserved bytes are counted once.
func TestInconsistentSegments(t *testing.T) {
	dir := corpus.Path(t, "hostile")
	for _, tt := range []struct {
		file, warn string
		segments   int
	}{
		{"duplicate_segment.pickle", "1 segment listed twice (segments[14] repeats segments[0]", 14},
		{"overlap_segments.pickle", "1 segment overlapping a segment at a lower address (segments[1]", 13},
		{"memo_seg_1e4x1e3.pickle", "9,999 segments listed twice", 1},
		{"requested_gt_size.pickle", "1 active block with requested_size above the block's size", 14},
		{"time_backwards.pickle", "device_traces[0]: time_us goes backwards", 14},
	} {
		s, err := Load(filepath.Join(dir, tt.file))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		n := 0
		for _, w := range s.Warnings {
			if strings.Contains(w, tt.warn) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s: %d warnings containing %q, want 1: %q", tt.file, n, tt.warn, s.Warnings)
		}
		if len(s.Segments) != tt.segments {
			t.Errorf("%s: %d segments, want %d", tt.file, len(s.Segments), tt.segments)
		}
	}
	// A range that wraps past 2^64.
	s := &Snapshot{Segments: []Segment{{Address: 1 << 63, TotalSize: 1 << 62}, {Address: ^Addr(0) - 10, TotalSize: 100}}}
	c := newConverter()
	c.s = s
	c.checkSegments()
	if len(s.Segments) != 1 || !strings.Contains(strings.Join(mapKeys(c.warnings), ""), "wraps past 2^64") {
		t.Errorf("segments %d, warnings %q", len(s.Segments), mapKeys(c.warnings))
	}
}

func mapKeys(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSharedTraceList: one memoized list of entries given to two devices
// gives both the entries.
func TestSharedTraceList(t *testing.T) {
	b := []byte("\x80\x04}(\x8c\x08segments]\x8c\x0ddevice_traces](]")
	b = append(b, "}(\x8c\x06action\x8c\x05alloc\x8c\x04addrK\x01\x8c\x04sizeM\x00\x02uaq\x09h\x09eu."...)
	s, err := Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Traces) != 2 || len(s.Traces[0]) != 1 || len(s.Traces[1]) != 1 {
		t.Fatalf("traces %v", s.Traces)
	}
}
