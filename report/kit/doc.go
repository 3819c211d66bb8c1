// Package kit is the text kit every view of package report and its
// sub-packages shares, so that a figure, a table or a wrapped line reads
// the same in every view:
//
//   - width.go: the terminal width (Writer, Width), and tables fitted to
//     it (FitColumns, FitWrapped), leaving out or wrapping columns;
//   - wrap.go: paragraphs wrapped at a width, with a hanging indent;
//   - table.go: the ASCII table every view draws (NewTable), and its
//     measures;
//   - escape.go: control and invisible characters from a file shown as
//     escapes, so a hostile name cannot rewrite the terminal;
//   - json.go: indented JSON, as every --json view writes it;
//   - spark.go: the character ramp of sparklines (leaks, smi, the page);
//   - errwriter.go: a writer that keeps its first error;
//   - int_runs.go: device and step numbers written as runs (0-3, 5);
//   - pool.go: a pool's label (large, small, private pool, expandable);
//   - trust.go, requested.go: the trust marks and words of a figure the
//     file cannot vouch for ("+" for a lower bound, "?" when unknown) in
//     text and its exactness in JSON, from the one verdict of the
//     analysis (analyze/stats.Known).
//
// Bytes, counts, plurals and durations are written by
// github.com/snapview/snapview/internal/units. kit writes no view of its
// own and computes no figure.
package kit
