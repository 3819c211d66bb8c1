package report

import (
	"strings"
	"testing"
)

// TestWrapLineWideIndent: an indent as wide as the line (a file's run of
// spaces) must not make wrapLine loop for ever; nothing is left out.
func TestWrapLineWideIndent(t *testing.T) {
	for _, n := range []int{60, 119, 120, 186, 500} {
		indent := strings.Repeat(" ", n)
		line := indent + strings.Repeat("x ", 200)
		got := wrapLine(line, 120, indent)
		if len(got) < 2 {
			t.Fatalf("indent %d: %d lines, want the line wrapped", n, len(got))
		}
		if w := strings.Join(strings.Fields(strings.Join(got, " ")), ""); w != strings.Repeat("x", 200) {
			t.Errorf("indent %d: text changed", n)
		}
	}
}
