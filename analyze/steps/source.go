package steps

import (
	"fmt"

	"github.com/snapview/snapview/snapshot"
)

// StepSource says how the trace was cut into the steps that growth is
// measured over.
type StepSource uint8

const (
	// StepsAuto (an option only) tries annotations, then a repeating
	// allocation, then equal slices.
	StepsAuto StepSource = iota
	// StepsAnnotation: one step per record_function range that repeats
	// once per training step (ProfilerStep#N, "step N" ranges,
	// Optimizer.step#...), from external_annotations.
	StepsAnnotation
	// StepsPattern: one step per allocation of the stack that the trace
	// allocates at a regular interval throughout (typically the input
	// batch).
	StepsPattern
	// StepsSlices: equal slices of the trace's entries; no steps found.
	StepsSlices
	// StepsNone: there is no trace to cut.
	StepsNone
)

// String returns the --steps spelling of src.
func (src StepSource) String() string {
	switch src {
	case StepsAnnotation:
		return "annotation"
	case StepsPattern:
		return "pattern"
	case StepsSlices:
		return "slices"
	case StepsNone:
		return "none"
	}
	return "auto"
}

// ParseStepSource parses "auto", "annotation", "pattern" or "slices".
func ParseStepSource(s string) (StepSource, error) {
	for _, src := range []StepSource{StepsAuto, StepsAnnotation, StepsPattern, StepsSlices} {
		if s == src.String() {
			return src, nil
		}
	}
	return 0, fmt.Errorf("unknown step source %q: want auto, annotation, pattern or slices", s)
}

// Steps describes how a [LeakReport] cut the trace.
type Steps struct {
	Source StepSource
	// Name is the annotation family ("ProfilerStep#N", digits shown as
	// N) for StepsAnnotation.
	Name string
	// Marker is the repeating allocation's stack for StepsPattern.
	Marker snapshot.StackID
	// Count is the number of steps (or slices), the prologue not counted.
	Count int
	// Prologue is true when Slices[0] holds the entries before the first
	// step (model creation, ...): it has Step 0.
	Prologue bool
}

// LeakSlice is one step (or equal slice) of the trace: entries Start to
// End, inclusive.
type LeakSlice struct {
	// Step numbers the steps from 1; 0 is the prologue.
	Step           int
	Start, End     int
	StartUS, EndUS int64
}

// MinPatternSteps is the fewest steps found from a repeating allocation
// (StepsPattern) that growth is judged over. One allocation repeating a
// few times at a regular interval is as often a loop inside one pass (the
// blocks of a model's forward pass, a DataParallel worker's loop) as
// training steps, and growth over such a loop (activations kept for the
// backward pass) looks like a leak; a record_function range (StepsAnnotation:
// ProfilerStep#N, Optimizer.step#...) says it is a step, a repeating
// allocation does not. With fewer repetitions than this, growth cannot be
// judged (the leak verdict would stand on as few as three points: the
// prologue and two full steps).
const MinPatternSteps = 8

// JudgesGrowth reports whether st's steps are ones a leak verdict may
// stand on: steps from a record_function range, or at least
// MinPatternSteps from a repeating allocation; never equal slices.
func (st Steps) JudgesGrowth() bool {
	switch st.Source {
	case StepsAnnotation:
		return true
	case StepsPattern:
		return st.Count >= MinPatternSteps
	}
	return false
}

// TooFewPatternSteps reports whether st's steps come from a repeating
// allocation too few times (under MinPatternSteps) to judge growth by.
func (st Steps) TooFewPatternSteps() bool {
	return st.Source == StepsPattern && st.Count < MinPatternSteps
}
