package frames

import (
	"strings"

	"github.com/snapview/snapview/snapshot"
)

// MemvizKeepsFrame reports whether torch/cuda/_memory_viz.py's
// _frame_filter keeps f: a frame is dropped when its name contains one of
// the unwinder's or CPython's evaluation-loop names, or its filename one
// of the dispatcher's or CPython's sources, whatever its language. This is
// the rule the folded stacks of `_memory_viz memory|segments` apply to
// every frame; [ClassifyFrame] applies the same lists to C and C++ frames
// only (FrameNoise).
func MemvizKeepsFrame(f snapshot.Frame) bool {
	for _, n := range noiseNames {
		if strings.Contains(f.Name, n) {
			return false
		}
	}
	for _, n := range noiseFiles {
		if strings.Contains(f.Filename, n) {
			return false
		}
	}
	return true
}
