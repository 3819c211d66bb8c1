package kit

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestWrapLineWideIndent: an indent as wide as the line (a file's run of
// spaces) must not make WrapLine loop for ever; nothing is left out.
func TestWrapLineWideIndent(t *testing.T) {
	for _, n := range []int{60, 119, 120, 186, 500} {
		indent := strings.Repeat(" ", n)
		line := indent + strings.Repeat("x ", 200)
		got := WrapLine(line, 120, indent)
		if len(got) < 2 {
			t.Fatalf("indent %d: %d lines, want the line wrapped", n, len(got))
		}
		if w := strings.Join(strings.Fields(strings.Join(got, " ")), ""); w != strings.Repeat("x", 200) {
			t.Errorf("indent %d: text changed", n)
		}
	}
}

// wrapLineQuadratic is WrapLine as it was before issue 28 (the rest of
// the line made runes again at each cut): the reference of
// TestWrapLineSameAsBefore.
func wrapLineQuadratic(line string, width int, indent string) []string {
	if utf8.RuneCountInString(indent) > width/2 {
		indent = ""
	}
	var out []string
	for utf8.RuneCountInString(line) > width {
		r := []rune(line)
		cut := -1
		minCut := utf8.RuneCountInString(indent) + 1
		for k := width; k > minCut && cut < 0; k-- {
			if r[k] == ' ' {
				cut = k
			}
		}
		next := -1
		if cut >= 0 {
			next = cut + 1
		} else {
			for k := width - 1; k > minCut && cut < 0; k-- {
				if r[k] == '/' || r[k] == '\\' {
					cut, next = k+1, k+1
				}
			}
		}
		if cut < 0 {
			cut, next = width, width
		}
		out = append(out, strings.TrimRight(string(r[:cut]), " "))
		line = indent + string(r[next:])
	}
	return append(out, line)
}

// TestWrapLineSameAsBefore: the linear WrapLine cuts every line where the
// quadratic one did, on random text of words, paths, wide runes and runs
// of spaces.
func TestWrapLineSameAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []string{"a", "word", "  ", " ", "/usr/lib/python3/site-packages/", `C:\x\y`, "é", "漢字", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}
	for i := range 3000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		width := 2 + rng.IntN(50)
		indent := strings.Repeat(" ", rng.IntN(12))
		got, want := WrapLine(b.String(), width, indent), wrapLineQuadratic(b.String(), width, indent)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: WrapLine(%q, %d, %q) = %q, want %q", i, b.String(), width, indent, got, want)
		}
	}
}
