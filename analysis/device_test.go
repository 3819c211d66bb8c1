package analysis

import (
	"testing"

	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// TestShownDevice: device 0 has segments only, device 1 a trace, device 2
// a trace with two oom entries: the peak shows 1, oom and oom:2 show 2,
// oom:3 (no device has three) the first with one; a file of segments
// only shows its first device, one without devices -1.
func TestShownDevice(t *testing.T) {
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{{Device: 0}},
		Traces: [][]snapshot.TraceEntry{
			nil,
			{{Action: snapshot.ActionAlloc}},
			{{Action: snapshot.ActionAlloc}, {Action: snapshot.ActionOOM}, {Action: snapshot.ActionOOM}},
		},
	}
	for _, tt := range []struct {
		at   steps.Moment
		dev  int
		why  string
		file *snapshot.Snapshot
	}{
		{steps.Moment{Kind: steps.MomentPeak}, 1, "the first with a trace", s},
		{steps.Moment{Kind: steps.MomentOOM}, 2, "the first with an oom entry", s},
		{steps.Moment{Kind: steps.MomentOOM, N: 3}, 2, "the first with an oom entry", s},
		{steps.Moment{Kind: steps.MomentEnd}, 0, "the first with segments", &snapshot.Snapshot{Segments: s.Segments}},
		{steps.Moment{Kind: steps.MomentEnd}, -1, "", &snapshot.Snapshot{}},
	} {
		if dev, why := ShownDevice(tt.file, tt.at); dev != tt.dev || why != tt.why {
			t.Errorf("ShownDevice(%v) = %d, %q; want %d, %q", tt.at, dev, why, tt.dev, tt.why)
		}
	}
}
