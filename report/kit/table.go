package kit

import (
	"io"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// NewTable returns the table every text view of snapview uses (style.md
// 2.8): ASCII borders, headers as written, no wrapping, and per-column
// alignment for header, rows and footer alike (align[i] for column i;
// columns beyond align are left-aligned).
func NewTable(w io.Writer, align ...tw.Align) *tablewriter.Table {
	aligns := tw.CellAlignment{PerColumn: align}
	return tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{Symbols: tw.NewSymbols(tw.StyleASCII)})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAlignmentConfig(aligns),
		tablewriter.WithRowAlignmentConfig(aligns),
		tablewriter.WithFooterAlignmentConfig(aligns),
	)
}

// DropColumn returns row without its column c when drop is set.
func DropColumn[T any](row []T, c int, drop bool) []T {
	if !drop {
		return row
	}
	return append(row[:c:c], row[c+1:]...)
}

// TableWidth is the width NewTable draws rows of these cells in: each
// column as wide as its widest line, plus a border and two spaces.
func TableWidth(rows [][]string) int {
	var widths []int
	for _, row := range rows {
		for c, cell := range row {
			for _, line := range strings.Split(cell, "\n") {
				if c >= len(widths) {
					widths = append(widths, 0)
				}
				widths[c] = max(widths[c], utf8.RuneCountInString(line))
			}
		}
	}
	total := 1
	for _, w := range widths {
		total += w + 3
	}
	return total
}
