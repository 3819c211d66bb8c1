// Package steps cuts a device's trace into training steps: from a
// record_function annotation that repeats once per step (ProfilerStep#N,
// Optimizer.step, as torch.profiler.record_function writes them into
// external_annotations), else from the allocation that recurs once per
// step, else into equal slices (LeakSlices, FindAnnotation, FindPattern).
// It also resolves a moment of the trace named on the command line (peak,
// oom:N, step:N, a time, an entry, the end) to a trace entry (Moment).
package steps
