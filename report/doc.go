// Package report renders the views of one file's state, as text for a
// terminal and as JSON for scripts, from what the analysis computed; it
// computes no figure of its own. Each command has a view file with a
// Write function for text and, beside it, one for --json: summary.go
// (with host.go, the host allocator's part), segments.go, state.go
// (whose OOM moment also shows the explain findings and the what-if cap
// verdict of report/verdictview), info.go and info_json.go; torch.go
// prints memory_summary()'s own table, byte for byte.
//
// The other views live in packages of their own below report, one per
// concept, as the analysis packages they render:
//
//   - report/kit: the text kit every view shares (terminal width, tables
//     fitted to it, wrapping, escapes, JSON, sparklines, the trust marks
//     and words of a figure the file cannot vouch for);
//   - report/stacks: how a stack is written, in every view;
//   - report/leakview: `snapview leaks` (analyze/leaks);
//   - report/traceview: `snapview trace`, the trace entries listed, and
//     _memory_viz's trace text byte for byte;
//   - report/compareview: `snapview diff` and `snapview ranks`
//     (analyze/compare);
//   - report/monitorview: nvidia-smi, memory_stats() and step logs, and
//     `snapview watch` (analyze/monitor);
//   - report/verdictview: `snapview whatif`, `explain`, `forecast` and
//     `check` (analyze/whatif, explain, forecast, check);
//   - report/html: the offline HTML page.
//
// Bytes, counts, plurals and durations are written by
// github.com/snapview/snapview/internal/units, so a figure reads the same
// in every view.
package report
