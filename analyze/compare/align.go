package compare

import (
	"fmt"

	"github.com/snapview/snapview/analyze/steps"
)

// AlignSteps lines sides up on their first steps, as `--align step` asks
// (the rule is steps.AlignFirst, which the multi-file report follows
// too): each side's times (FirstUS, AtUS, FirstStepUS and the peaks'
// times) move later by its Side.ShiftUS, so that every first step starts
// at the latest one's time_us. It returns an error naming the first
// side without steps on the time_us clock, and then moves nothing.
func AlignSteps(sides []*Side) error {
	first := make([]int64, len(sides))
	has := make([]bool, len(sides))
	for i, s := range sides {
		first[i], has[i] = s.FirstStepUS, s.HasFirstStep
	}
	_, shifts, missing := steps.AlignFirst(first, has)
	if missing >= 0 {
		s := sides[missing]
		return &AlignError{File: s.File, Device: s.Device}
	}
	for i, s := range sides {
		dx := shifts[i]
		s.ShiftUS, s.Aligned = dx, true
		s.FirstUS += dx
		s.AtUS += dx
		s.FirstStepUS += dx
		if s.PeakAllocatedAt >= 0 {
			s.PeakAllocatedUS += dx
		}
		if s.PeakReservedAt >= 0 {
			s.PeakReservedUS += dx
		}
	}
	return nil
}

// AlignError is AlignSteps' error: device Device of File has no steps
// on the time_us clock to line up.
type AlignError struct {
	File   string
	Device int
}

func (e *AlignError) Error() string {
	return fmt.Sprintf("%s: device %d: no steps on the time_us clock to align on (the trace has no record_function step annotations or repeating allocation, or no time_us)", e.File, e.Device)
}
