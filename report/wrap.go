package report

import (
	"strings"
	"unicode/utf8"
)

// wrapIndented returns text after prefix, wrapped at infoWidth columns,
// continuation lines indented to the prefix's width, each line ending in
// a newline.
func wrapIndented(prefix, text string) string { return wrapAt(prefix, text, infoWidth) }

// wrapAt is wrapIndented at width columns.
func wrapAt(prefix, text string, width int) string {
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

// wrapLine breaks line into lines of at most width characters, the
// continuation lines starting with indent: at the last space that fits,
// else (a long path) after the last '/' or '\' that fits, else anywhere.
// Nothing is left out.
func wrapLine(line string, width int, indent string) []string {
	if utf8.RuneCountInString(indent) > width/2 {
		// Each line must take something from the text: an indent as wide
		// as the line would never end (a file's name of 200 spaces).
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
