package report

import (
	"io"
	"strconv"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// FormatBytes formats a byte count for people: binary units with one
// decimal ("512 B", "1.5 KiB", "20.0 MiB"), choosing the unit so that the
// rounded figure stays below 1024 (1048575 bytes is "1.0 MiB", where
// _memory_viz prints "1024.0KiB").
func FormatBytes(n int64) string {
	if n > -1024 && n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	for i, u := range units {
		s := strconv.FormatFloat(v, 'f', 1, 64)
		if i == len(units)-1 || (s != "1024.0" && s != "-1024.0" && v > -1024 && v < 1024) {
			return s + " " + u
		}
		v /= 1024
	}
	panic("unreachable")
}

// FormatInt formats an integer with thousands separators: 2000000 is
// "2,000,000".
func FormatInt(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}

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
