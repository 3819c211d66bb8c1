package compare

import (
	"errors"
	"testing"

	"github.com/snapview/snapview/analyze/stats"
)

func TestAlignSteps(t *testing.T) {
	mk := func(file string, first, step, peak int64, has bool) *Side {
		sd := &Side{File: file, HasTime: true, FirstUS: first, FirstStepUS: step, HasFirstStep: has,
			At: 5, AtUS: peak, PeakAllocatedAt: 5, PeakAllocatedUS: peak, PeakReservedAt: -1, PeakReservedUS: 0}
		sd.Stats.Known.History = stats.Exact
		return sd
	}
	a, b := mk("a", 1_000, 2_000, 9_000, true), mk("b", 1_500, 2_700, 9_100, true)
	if err := AlignSteps([]*Side{a, b}); err != nil {
		t.Fatal(err)
	}
	// b's first step is the latest: a moves 700 µs later.
	if a.ShiftUS != 700 || b.ShiftUS != 0 || !a.Aligned || !b.Aligned {
		t.Fatalf("shifts %d %d, aligned %v %v; want 700 0", a.ShiftUS, b.ShiftUS, a.Aligned, b.Aligned)
	}
	if a.FirstStepUS != b.FirstStepUS || a.FirstUS != 1_700 || a.PeakAllocatedUS != 9_700 || a.AtUS != 9_700 {
		t.Errorf("a after aligning: first step %d (b %d), first %d, peak %d, at %d", a.FirstStepUS, b.FirstStepUS, a.FirstUS, a.PeakAllocatedUS, a.AtUS)
	}
	if a.PeakReservedUS != 0 {
		t.Errorf("a peak with no entry (-1) moved to %d", a.PeakReservedUS)
	}
	rk := CompareRanks([]*Side{a, b}, 0)
	if !rk.Aligned || rk.FirstStepsApartUS != 700 || rk.PeakSpreadUS != 600 {
		t.Errorf("ranks: aligned %v, first steps apart %d, spread %d; want true, 700, 600", rk.Aligned, rk.FirstStepsApartUS, rk.PeakSpreadUS)
	}

	c, d := mk("c", 0, 10, 20, true), mk("d", 0, 0, 20, false)
	err := AlignSteps([]*Side{c, d})
	var ae *AlignError
	if !errors.As(err, &ae) || ae.File != "d" {
		t.Fatalf("a side without steps: %v, want an AlignError naming d", err)
	}
	if c.Aligned || c.ShiftUS != 0 || c.FirstStepUS != 10 {
		t.Errorf("a failed alignment moved c: %+v", c)
	}
}
