// Package stacks writes an allocation's stack as every view shows it
// (leaks, state, diff, trace, check, explain and the HTML report): the
// user's frames, runs of frames inside torch/ or the standard library
// folded into one line, the unwinder's frames (_memory_viz's
// _frame_filter, via analyze/frames) and the allocator's own frames left
// out, C++ names cut short, frames of torch.compile's generated files
// named by their compiled region (stacks_region.go), and a stack's frames
// as JSON (json.go). It computes no figure.
package stacks
