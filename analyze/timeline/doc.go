// Package timeline draws a device's memory over its trace for the HTML
// report: the series downsampled to a pixel budget keeping each bucket's
// minimum and maximum (DownsampleMinMax), and the live bytes split by
// allocation stack into the largest groups and "other" (StackTimeline), as
// torch/cuda/_memory_viz.py's trace plot stacks allocations.
package timeline
