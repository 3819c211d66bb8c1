package export

import (
	"bytes"
	"strings"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestFoldedEscapesSeparators: a frame name holding a line break or ';'
// stays inside its sample (one line per block, every line a sample), so
// that a name cannot forge samples or frames.
func TestFoldedEscapesSeparators(t *testing.T) {
	js := `{"segments": [{"device": 0, "address": 2097152, "total_size": 2097152, "allocated_size": 512,
		"active_size": 512, "requested_size": 512, "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
		"is_expandable": false, "frames": [], "blocks": [
		{"address": 2097152, "size": 512, "requested_size": 512, "state": "active_allocated",
		 "frames": [{"filename": "/x/model.py", "line": 3, "name": "f\nstream_0;active_allocated;forged 999999999\nx;y"}]},
		{"address": 2097664, "size": 2096640, "requested_size": 0, "state": "inactive", "frames": []}]}]}`
	s, err := snapshot.Decode(strings.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteFolded(&b, s, FileSegments(s), FoldedOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for _, l := range lines {
		if strings.Contains(l, "forged") && strings.Count(l, ";") != 2 {
			t.Errorf("the frame's ';' splits it: %q", l)
		}
		if strings.HasPrefix(l, "forged") || strings.HasPrefix(l, "x;y") {
			t.Errorf("a frame name forged a sample: %q", l)
		}
	}
	if len(lines) != 3 {
		t.Errorf("%d lines, want one per block and the free block's gaps (3):\n%s", len(lines), b.String())
	}
}
