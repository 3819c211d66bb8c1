package html

import (
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// TestPageRangesAreStepsRanges: the page shades the record_function
// ranges steps.Ranges pairs, so an END without START (a recording begun
// inside the range) is drawn from the first entry to its END, and a START
// without END to the last entry, on mlp_train.pickle with such an END and
// such a START added.
func TestPageRangesAreStepsRanges(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	tr := s.Traces[0]
	endAt, startAt := tr[10].TimeUS, tr[len(tr)-5].TimeUS
	s.Annotations = append(s.Annotations,
		snapshot.Annotation{Stage: "END", Name: "begun_before", Device: 0, TimeUS: endAt},
		snapshot.Annotation{Stage: "START", Name: "never_ends", Device: 0, TimeUS: startAt})
	r, err := buildHTML(s, Options{Title: "ranges"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Range{}
	for _, a := range r.Devices[0].Annotations {
		got[a.Name] = a
	}
	t0, t1 := tr[0].TimeUS, tr[len(tr)-1].TimeUS
	if a, ok := got["begun_before"]; !ok || a.X0 != 0 || a.X1 != endAt-t0 || a.I0 != 0 {
		t.Errorf("END without START drawn as %+v (found %v), want from 0 to %d", a, ok, endAt-t0)
	}
	if a, ok := got["never_ends"]; !ok || a.X0 != startAt-t0 || a.X1 != t1-t0 || a.I1 != len(tr)-1 {
		t.Errorf("START without END drawn as %+v (found %v), want from %d to %d", a, ok, startAt-t0, t1-t0)
	}
	// One rule: the page draws exactly steps.Ranges' ranges.
	type span struct {
		name   string
		x0, x1 int64
	}
	want := map[span]int{}
	for _, rg := range steps.Ranges(s, 0, t1) {
		want[span{rg.Name, max(rg.StartUS, t0) - t0, min(rg.EndUS, t1) - t0}]++
	}
	for _, a := range r.Devices[0].Annotations {
		want[span{a.Name, a.X0, a.X1}]--
	}
	for sp, n := range want {
		if n != 0 {
			t.Errorf("range %+v: steps.Ranges has %d more than the page", sp, n)
		}
	}
}
