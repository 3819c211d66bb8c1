package kit

import (
	"strings"
	"unicode/utf8"
)

// WrapIndented returns text after prefix, wrapped at InfoWidth columns,
// continuation lines indented to the prefix's width, each line ending in
// a newline.
func WrapIndented(prefix, text string) string { return WrapAt(prefix, text, InfoWidth) }

// WrapAt is WrapIndented at width columns.
func WrapAt(prefix, text string, width int) string {
	var b strings.Builder
	indent := strings.Repeat(" ", len([]rune(prefix)))
	line := prefix
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len([]rune(line))+1+len([]rune(word)) > width {
			b.WriteString(line + "\n")
			line, empty = indent, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
	return b.String()
}

// WrapLine breaks line into lines of at most width characters, the
// continuation lines starting with indent: at the last space that fits,
// else (a long path) after the last '/' or '\' that fits, else anywhere.
// Nothing is left out. It costs O(len(line) + lines*width): the line is
// made runes once and each cut looks back at most width runes, so a token
// of megabytes is hard-wrapped in linear time.
func WrapLine(line string, width int, indent string) []string {
	if utf8.RuneCountInString(indent) > width/2 {
		// Each line must take something from the text: an indent as wide
		// as the line would never end (a file's name of 200 spaces).
		indent = ""
	}
	width = max(width, 1)
	if utf8.RuneCountInString(line) <= width {
		return []string{line}
	}
	ind := []rune(indent)
	r := []rune(line)
	minCut := len(ind) + 1
	var out []string
	// The line being cut is head (the indent, after the first) followed
	// by r[pos:]; at(k) is its k-th rune.
	var head []rune
	pos := 0
	at := func(k int) rune {
		if k < len(head) {
			return head[k]
		}
		return r[pos+k-len(head)]
	}
	for len(head)+len(r)-pos > width {
		cut := -1
		for k := width; k > minCut && cut < 0; k-- {
			if at(k) == ' ' {
				cut = k
			}
		}
		next := -1
		if cut >= 0 {
			next = cut + 1
		} else {
			for k := width - 1; k > minCut && cut < 0; k-- {
				if c := at(k); c == '/' || c == '\\' {
					cut, next = k+1, k+1
				}
			}
		}
		if cut < 0 {
			cut, next = width, width
		}
		piece := make([]rune, 0, cut)
		for k := 0; k < cut; k++ {
			piece = append(piece, at(k))
		}
		out = append(out, strings.TrimRight(string(piece), " "))
		pos += next - len(head)
		head = ind
	}
	return append(out, string(head)+string(r[pos:]))
}
