// Package report renders what the analysis packages computed, as text
// for a terminal and as JSON for scripts; it computes no figure of its
// own. Each command has a view file (summary.go, segments.go, state.go,
// leaks.go, trace.go, diff.go, ranks.go, whatif.go, info.go, monitor_*.go)
// with a Write function for text and, beside it, one for --json; torch.go
// prints memory_summary()'s own table and trace_memviz.go _memory_viz's
// trace_plot text, byte for byte.
//
// The text kit every view shares lives in files of its own:
//
//   - width.go: the terminal width (kit.Writer), and tables fitted to it
//     (kit.FitColumns, kit.FitWrapped), leaving out or wrapping columns;
//   - wrap.go: paragraphs wrapped at a width, with a hanging indent;
//   - table.go: the ASCII table every view draws (kit.NewTable), and its
//     measures;
//   - escape.go: control and invisible characters from a file shown as
//     escapes, so a hostile name cannot rewrite the terminal;
//   - json.go: indented JSON, as every --json view writes it;
//   - spark.go: the character ramp of sparklines (leaks, smi, the page);
//   - errwriter.go: a writer that keeps its first error.
//
// Bytes, counts, plurals and durations are written by
// github.com/snapview/snapview/internal/units, so a figure reads the same
// in every view. A figure the file cannot vouch for carries its trust
// mark ("+" for a lower bound, "?" when unknown) in text and its
// exactness in JSON, from the one verdict of the analysis; trust.go
// holds those marks and words (kit.TrustText), requested.go the verdict on
// requested bytes.
package report
