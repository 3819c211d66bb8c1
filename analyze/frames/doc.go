// Package frames classifies the frames of allocation stacks: user code,
// torch, the standard library, C++ and the unwinder's noise (ClassifyFrame),
// writes them as "filename:line name" (FrameText), keys stacks for
// grouping (StackKeys), and keeps the frames torch/cuda/_memory_viz.py's
// _frame_filter keeps (MemvizKeepsFrame).
package frames
