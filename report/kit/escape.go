package kit

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s safe to print on a terminal: the characters a terminal
// acts on instead of showing are written as escapes in the style of Go's
// strconv.Quote: C0 controls, DEL and C1 controls as \a \b \t \n \v \f \r
// or \x1b, \u009b; the Unicode format characters (the right-to-left and
// isolate overrides U+202A-U+202E and U+2066-U+2069, zero-width joiners,
// ...) as \u202e; bytes that are not UTF-8 as \xff. Everything else,
// letters of any script included, is kept, so a table measures an escaped
// name like any other text. A string with nothing to escape comes back as
// it is, without a copy.
//
// Every text view passes the strings it takes from the file (frame names
// and files, keys, metadata, annotation names) through Escape where they
// become text; error messages are escaped as a whole before they are
// printed. JSON output needs no escaping: encoding/json escapes control
// characters itself.
func Escape(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !needsEscape(r, n) {
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\a':
			b.WriteString(`\a`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\v':
			b.WriteString(`\v`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < utf8.RuneSelf:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
		i += n
	}
	return b.String()
}

// needsEscape reports whether the rune r, n bytes long, must be escaped.
func needsEscape(r rune, n int) bool {
	switch {
	case r >= 0x20 && r < 0x7f:
		return false
	case r == utf8.RuneError:
		return n == 1
	case r < 0x20 || r >= 0x7f && r < 0xa0:
		return true
	}
	return unicode.Is(unicode.Cf, r) || r == 0x2028 || r == 0x2029
}

// EscapeAll returns the strings of ss escaped (see Escape).
func EscapeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Escape(s)
	}
	return out
}
