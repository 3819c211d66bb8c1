// Package units writes and reads the quantities every view of snapview
// shows: byte counts ("1.5 KiB"), counts with thousands separators
// ("2,000,000"), plurals ("3 trace entries"), and durations given in
// microseconds, the unit of PyTorch's trace entries (time_us). Every
// package formats through it, so a figure reads the same in every view.
//
// Figures that mirror PyTorch's own printing (memory_summary()'s
// _format_size in report/torch.go, _memory_viz's Bytes in
// report/traceview/memviz.go) keep their own code: they copy torch's output,
// not snapview's.
package units
