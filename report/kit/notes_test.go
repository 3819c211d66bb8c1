package kit

import (
	"strings"
	"testing"

	"github.com/snapview/snapview/analysis"
)

func TestWriteNotes(t *testing.T) {
	tests := []struct {
		name string
		note analysis.Note
		want string
	}{
		{"plain", analysis.Note{Kind: analysis.Info, Text: "x"}, "note: x\n"},
		{"hint", analysis.Note{Kind: analysis.Hint, Text: "try --top 20"}, "hint: try --top 20\n"},
		{"file and device", analysis.Note{File: "a.pickle", Devices: []int{3}, Text: "t"}, "warning: a.pickle: device 3: t\n"},
		{"devices", analysis.Note{Devices: []int{0, 1, 2, 3, 4, 5, 6, 7, 8}, Text: "t"},
			"warning: 9 devices (0, 1, 2, 3, 4, 5, 6, 7, …): t\n"},
		{"escaped", analysis.Note{File: "a\x1b.p", Text: "b\nc"}, "warning: a\\x1b.p: b\\nc\n"},
		{"end state", analysis.EndStateNote("f", []int{1}, "figures", []string{"d1", "d\x1b2"}),
			"warning: f: device 1: the replayed end state differs from the file's segments; figures may be off:\n" +
				"warning:   d1\nwarning:   d\\x1b2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := WriteNotes(&b, []analysis.Note{tt.note}); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got %q, want %q", b.String(), tt.want)
			}
		})
	}
}
