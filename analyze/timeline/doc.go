// Package timeline draws a device's memory over its trace for the HTML
// report: the series downsampled to a pixel budget keeping each bucket's
// minimum and maximum (DownsampleMinMax), and the live bytes split by
// allocation stack into the largest groups and "other" (StackTimeline), as
// torch/cuda/_memory_viz.py's trace plot stacks allocations. For a long
// trace it adds a multi-resolution index of the same series (Level), from
// which a zoomed window is redrawn with the trace's own entries, the
// largest allocations of each region of the trace (Single), which the page
// draws on their own, and the envelope of the training steps at full
// width (StepEnvelope).
package timeline
