package stacks

import (
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestStackLinesEscaped: frame names and files with control characters
// come out escaped in the text views' stack lines, raw in --json's frames.
func TestStackLinesEscaped(t *testing.T) {
	s := &snapshot.Snapshot{
		Frames: []snapshot.Frame{{Filename: "/x/\x1b]0;t\a.py", Line: 3, Name: "run\u202e"}},
		Stacks: [][]snapshot.FrameID{{}, {0}},
	}
	got := LinesOf(s, 1, LineOptions{})
	if len(got) != 1 || got[0] != `/x/\x1b]0;t\a.py:3 run\u202e` {
		t.Errorf("stackLines = %q", got)
	}
	raw := LinesOf(s, 1, LineOptions{Full: true, Raw: true})
	if len(raw) != 1 || raw[0] != "/x/\x1b]0;t\a.py:3 run\u202e" {
		t.Errorf("raw stackLines = %q", raw)
	}
}
