package kit

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter/tw"
)

// Widths of the text views, in columns.
const (
	// DefaultWidth is the width when the output is not a terminal and
	// none was asked for.
	DefaultWidth = 120
	// MinWidth is the narrowest width the views lay out for; a narrower
	// request is raised to it.
	MinWidth = 60
)

// InfoWidth is the column the text of info and summary is wrapped at
// (WrapIndented), whatever the terminal's width.
const InfoWidth = 100

// Writer is the writer the text views write to when they should fit
// a width: every line longer than Width that is not a table row is
// wrapped at a space (or, in a long path, after a '/' or '\'), its
// continuation lines indented as the line was; nothing is cut. The views
// also read Width (see Width) to lay out their tables: they leave out
// the least needed columns, saying so, until a table fits. Call Flush
// after the last write.
type Writer struct {
	w     io.Writer
	width int
	buf   []byte
	err   error
}

// NewWriter returns a Writer writing to w at width columns
// (MinWidth at least; 0 means DefaultWidth).
func NewWriter(w io.Writer, width int) *Writer {
	if width <= 0 {
		width = DefaultWidth
	}
	return &Writer{w: w, width: max(width, MinWidth)}
}

// Width returns the width in columns.
func (t *Writer) Width() int { return t.width }

// Unwrapped returns the writer under t, for a view that lays out its
// lines to the width itself and writes past t; ok is false while t holds
// part of a line (the view must then write through t).
func (t *Writer) Unwrapped() (w io.Writer, ok bool) { return t.w, len(t.buf) == 0 }

// Write buffers p and writes its complete lines, wrapped.
func (t *Writer) Write(p []byte) (int, error) {
	if t.err != nil {
		return 0, t.err
	}
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.line(string(t.buf[:i]), true)
		t.buf = t.buf[i+1:]
	}
	return len(p), t.err
}

// Flush writes what is left of the last line.
func (t *Writer) Flush() error {
	if len(t.buf) > 0 {
		t.line(string(t.buf), false)
		t.buf = t.buf[:0]
	}
	return t.err
}

func (t *Writer) line(s string, newline bool) {
	lines := []string{s}
	if utf8.RuneCountInString(s) > t.width && !isTableLine(s) {
		indent := s[:len(s)-len(strings.TrimLeft(s, " "))]
		lines = WrapLine(s, t.width, indent)
	}
	for i, l := range lines {
		if t.err != nil {
			return
		}
		if i < len(lines)-1 || newline {
			l += "\n"
		}
		_, t.err = io.WriteString(t.w, l)
	}
}

// isTableLine reports whether s is a row or rule of a table.
func isTableLine(s string) bool {
	return strings.HasPrefix(s, "|") || strings.HasPrefix(s, "+")
}

// Width returns the width the views write to w should fit:
// Writer's, or DefaultWidth.
func Width(w io.Writer) int {
	if x, ok := w.(*Writer); ok {
		return x.width
	}
	return DefaultWidth
}

// FitTable is a table laid out to a width: the header, rows and footer
// with the columns that fit, and the names of those left out.
type FitTable struct {
	Header  []string
	Rows    [][]string
	Footer  []string
	Align   []tw.Align
	Dropped []string
}

// FitColumns leaves out columns of a table, in the order drop gives
// (column indexes of header), until its width is at most width; the
// columns not in drop always stay. footer may be nil.
func FitColumns(width int, header []string, align []tw.Align, rows [][]string, footer []string, drop ...int) FitTable {
	keep := make([]bool, len(header))
	for i := range keep {
		keep[i] = true
	}
	pick := func(row []string) []string {
		if row == nil {
			return nil
		}
		out := make([]string, 0, len(row))
		for i, c := range row {
			if i < len(keep) && keep[i] {
				out = append(out, c)
			}
		}
		return out
	}
	build := func() FitTable {
		ft := FitTable{Header: pick(header), Footer: pick(footer)}
		for i, a := range align {
			if i < len(keep) && keep[i] {
				ft.Align = append(ft.Align, a)
			}
		}
		for _, r := range rows {
			ft.Rows = append(ft.Rows, pick(r))
		}
		for i, k := range keep {
			if !k {
				ft.Dropped = append(ft.Dropped, strings.ReplaceAll(header[i], "\n", " "))
			}
		}
		return ft
	}
	ft := build()
	for _, c := range drop {
		all := append(append([][]string{ft.Header}, ft.Rows...), ft.Footer)
		if TableWidth(all) <= width {
			break
		}
		keep[c] = false
		ft = build()
	}
	return ft
}

// Render writes the table to w, with a line naming the columns left out.
func (ft FitTable) Render(w io.Writer, more string) error {
	t := NewTable(w, ft.Align...)
	t.Header(ft.Header)
	if err := t.Bulk(ft.Rows); err != nil {
		return err
	}
	if ft.Footer != nil {
		t.Footer(ft.Footer)
	}
	if err := t.Render(); err != nil {
		return err
	}
	return ft.DroppedNote(w, more)
}

// DroppedNote writes which columns were left out to fit the width.
func (ft FitTable) DroppedNote(w io.Writer, more string) error {
	if len(ft.Dropped) == 0 {
		return nil
	}
	note := "Left out to fit " + strconv.Itoa(Width(w)) + " columns: " + strings.Join(ft.Dropped, ", ")
	if more != "" {
		note += " (" + more + ")"
	}
	_, err := io.WriteString(w, WrapAt("", note+".", Width(w)))
	return err
}

// MinWrapWidth is the narrowest a wrapped column of a table gets.
const MinWrapWidth = 24

// FitWrapped is FitColumns for a table whose column wrap (never in drop)
// holds long text (a stack, a setting): that column's lines are wrapped
// to what the other columns leave of width (MinWrapWidth at least),
// continuation lines indented two spaces more, after the columns in drop
// are left out as far as they must.
func FitWrapped(width int, header []string, align []tw.Align, rows [][]string, footer []string, wrap int, drop ...int) FitTable {
	wrapped := func(n int) [][]string {
		out := make([][]string, len(rows))
		for i, r := range rows {
			out[i] = append([]string(nil), r...)
			if wrap < len(r) {
				out[i][wrap] = WrapCell(r[wrap], n)
			}
		}
		return out
	}
	foot := func(n int) []string {
		if wrap >= len(footer) {
			return footer
		}
		f := append([]string(nil), footer...)
		f[wrap] = WrapCell(f[wrap], n)
		return f
	}
	head := func(n int) []string {
		h := append([]string(nil), header...)
		h[wrap] = strings.ReplaceAll(WrapCell(h[wrap], n), "\n  ", "\n")
		return h
	}
	narrow := wrapped(MinWrapWidth)
	ft := FitColumns(width, head(MinWrapWidth), align, narrow, foot(MinWrapWidth), drop...)
	col := 0
	for _, r := range append(narrow, ft.Header, foot(MinWrapWidth)) {
		if wrap < len(r) {
			for _, l := range strings.Split(r[wrap], "\n") {
				col = max(col, utf8.RuneCountInString(l))
			}
		}
	}
	rest := TableWidth(append(append([][]string{ft.Header}, ft.Rows...), ft.Footer)) - col
	n := max(width-rest, MinWrapWidth)
	return FitColumns(width, head(n), align, wrapped(n), foot(n), drop...)
}

// WrapCell wraps each line of a table cell to width columns, continuation
// lines indented as the line is, plus two spaces.
func WrapCell(cell string, width int) string {
	var out []string
	for _, l := range strings.Split(cell, "\n") {
		indent := l[:len(l)-len(strings.TrimLeft(l, " "))] + "  "
		out = append(out, WrapLine(l, width, indent)...)
	}
	return strings.Join(out, "\n")
}

// WrapTo is WrapAt at the width of w (see Width).
func WrapTo(w io.Writer, prefix, text string) string { return WrapAt(prefix, text, Width(w)) }
