package report

import (
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// newTable returns the table every text view of snapview uses (style.md
// 2.8): ASCII borders, headers as written, no wrapping, and per-column
// alignment for header, rows and footer alike (align[i] for column i;
// columns beyond align are left-aligned).
func newTable(w io.Writer, align ...tw.Align) *tablewriter.Table {
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
