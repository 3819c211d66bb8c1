package forecast

import (
	"fmt"
	"testing"
)

// TestExplore logs the forecast of each other point from the two smallest.
func TestExplore(t *testing.T) {
	for _, w := range []string{"gpt2_bs", "gpt2_seq", "resnet50_bs"} {
		pts := seriesOf(t, scalingRoots[0], w)
		if len(pts) < 3 {
			t.Skip("no series")
		}
		var targets []int64
		for _, p := range pts[2:] {
			targets = append(targets, p.value)
		}
		res, err := Run(filesOf(t, pts[:2]), Options{Param: "v", Targets: targets})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: matched %.4f req %.4f bytes, forms %v, unmatched %+v", w, res.MatchedRequests, res.MatchedBytes, res.Forms, res.Unmatched)
		for i, tg := range res.Targets {
			p := pts[i+2]
			t.Logf("%s %d: alloc %d vs %d (%+.2f%%) reserved %d vs %d (%+.2f%%)", w, tg.Value,
				tg.PeakAllocated, p.peakAllocated, pct(tg.PeakAllocated, p.peakAllocated),
				tg.PeakReserved, p.peakReserved, pct(tg.PeakReserved, p.peakReserved))
		}
		_ = fmt.Sprint
	}
}
