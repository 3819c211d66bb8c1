package report

import (
	"context"
	"errors"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// TestStateOf: at an oom entry the view opens with explain's findings and
// the what-if verdict; a device without trace entries falls back to the
// file's state with a note unless the moment was given, and then a peak
// is an error.
func TestStateOf(t *testing.T) {
	s, _ := replay.Complete(stateSnapshot())
	f := analysis.New(s, analysis.Options{})
	v, notes, err := StateOf(context.Background(), f, StateRequest{At: steps.Moment{Kind: steps.MomentOOM}, Label: "oom", AtSet: true})
	if err != nil || len(notes) != 0 || v.Explain == nil || v.At != "oom" {
		t.Fatalf("StateOf(oom) = %+v, notes %+v, %v; want explain's findings", v, notes, err)
	}

	noTrace := &snapshot.Snapshot{Segments: s.Segments, Frames: s.Frames, Stacks: s.Stacks}
	f = analysis.New(noTrace, analysis.Options{})
	peak := StateRequest{At: steps.Moment{Kind: steps.MomentPeak}, Label: "peak"}
	v, notes, err = StateOf(context.Background(), f, peak)
	if err != nil || len(notes) != 1 || notes[0].Kind != analysis.Info || v.At != "end" {
		t.Errorf("StateOf(peak, no trace) = %+v, notes %+v, %v; want the end state with a note", v, notes, err)
	}
	peak.AtSet = true
	var me *steps.MomentError
	var a *analysis.AbsentError
	if _, _, err = StateOf(context.Background(), f, peak); err == nil || !errors.As(err, &a) && !errors.As(err, &me) {
		t.Errorf("StateOf(--at peak, no trace) = %v; want a moment error", err)
	}
}
