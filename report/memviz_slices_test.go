package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/snapview/snapview/report/traceview"
	"github.com/snapview/snapview/snapshot"
)

// memvizSlices returns the slices and conversions of testdata/slices
// (written by snapview slice and convert: testdata/gen/slices.sh) with
// the name their _memory_viz outputs start with.
func memvizSlices(t *testing.T) map[string]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "slices", "*.*"))
	out := map[string]string{}
	for _, f := range files {
		if ext := filepath.Ext(f); ext == ".pickle" || ext == ".json" {
			out[strings.TrimSuffix(f, ext)] = f
		}
	}
	if len(out) == 0 {
		t.Fatal("no slices in ../testdata/slices")
	}
	return out
}

// TestSlicesAgreeWithMemviz: on every slice and conversion snapview
// writes (testdata/slices), `snapview trace --format memviz` prints what
// `python -m torch.cuda._memory_viz trace` printed on a machine with
// PyTorch 2.11, byte for byte, and the totals of `snapview segments` are
// the footer of its `stats` (segment count, total_reserved,
// total_allocated, total_free with its internal share).
func TestSlicesAgreeWithMemviz(t *testing.T) {
	for base, f := range memvizSlices(t) {
		name := filepath.Base(base)
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := os.ReadFile(base + ".memviz_trace.txt")
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := traceview.WriteMemvizTrace(&got, s); err != nil {
			t.Fatal(err)
		}
		// print() adds a newline after trace()'s text.
		if g, w := got.String(), strings.TrimSuffix(string(want), "\n"); strings.TrimSuffix(g, "\n") != w {
			t.Errorf("%s: trace differs from _memory_viz's (%d bytes, want %d): %s", name, len(g), len(w), firstLineDiff(g, w))
		}
		r := NewSegments(s, s.Devices())
		tot := &r.Total
		gotFooter := map[string]string{
			"segments":        strconv.Itoa(tot.Segments),
			"total_reserved":  memvizBytes(tot.Size),
			"total_allocated": memvizBytes(tot.RequestedBytes),
			"total_free":      memvizBytes(tot.FreeBytes()) + " (" + internalPct(tot) + " internal)",
		}
		for k, w := range memvizFooter(t, base+".memviz_stats.txt") {
			if gotFooter[k] != w {
				t.Errorf("%s: %s = %q, _memory_viz stats says %q", name, k, gotFooter[k], w)
			}
		}
	}
}

// firstLineDiff shows the first line where a and b differ.
func firstLineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return "line " + strconv.Itoa(i+1) + ": got " + strconv.Quote(x) + ", want " + strconv.Quote(y)
		}
	}
	return ""
}
