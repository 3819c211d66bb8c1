// Package html draws the offline HTML report of a snapshot: per device, the
// memory_summary() table, a timeline of allocated, active and reserved
// bytes split by allocation stack (as torch/cuda/_memory_viz.py's trace
// plot stacks allocations), the OOMs with the what-if verdict, the steps,
// the leaks, the segments at the peak, and an inspection panel that shows
// the allocator state after any entry, optionally with nvidia-smi and
// memory_stats() logs set against the timeline.
//
// It computes nothing itself: Build reads every figure, replay and analysis
// from an analysis.File (its Stats, Info and Page), words them with package
// report's text views, and Write renders the page, with its scripts,
// styles and the chart library embedded (no network).
package html
