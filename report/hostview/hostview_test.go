package hostview

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/snapshot"
)

// TestLinesSplit: Lines is FigureLines then LiveLine (the page lists the
// live pinned memory in full and takes FigureLines), on a file with a host
// trace, one of host memory only; a file whose host keys hold nothing
// (PyTorch writes them empty when host recording is off) or has none has
// no lines and no JSON.
func TestLinesSplit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines int // of Lines
		live  bool
	}{{"host_pinned", 5, true}, {"host_memory", 5, true}, {"newer-fields", 0, false}, {"mlp_train", 0, false}} {
		s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", tc.name+".pickle"))
		if err != nil {
			t.Fatal(err)
		}
		h := info.Host(s)
		lines, fig, live := Lines(&h), FigureLines(&h), LiveLine(&h)
		if len(lines) != tc.lines || (live != "") != tc.live {
			t.Errorf("%s: %d lines, live line %q; want %d lines, live %v:\n%s", tc.name, len(lines), live, tc.lines, tc.live, strings.Join(lines, "\n"))
		}
		want := fig
		if live != "" {
			want = append(slices.Clone(fig), live)
		}
		if !slices.Equal(lines, want) {
			t.Errorf("%s: Lines = %q, want FigureLines then LiveLine %q", tc.name, lines, want)
		}
		if j := NewJSON(&h); (j == nil) != (tc.lines == 0) {
			t.Errorf("%s: NewJSON = %v with %d lines", tc.name, j, len(lines))
		}
	}
}
