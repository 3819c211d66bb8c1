package steps

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapview/snapview/snapshot"
)

// TestOpenAt: ranges pair START and END by name (an END closes the latest
// open START of its name), nest, run to the given end without an END,
// and an END without START runs from the device's first trace entry (the
// recording began inside it); OpenAt lists those open at a time,
// outermost first, on the asked device only.
func TestOpenAt(t *testing.T) {
	an := func(stage, name string, dev int, us int64) snapshot.Annotation {
		return snapshot.Annotation{Stage: stage, Name: name, Device: dev, TimeUS: us}
	}
	s := &snapshot.Snapshot{Traces: [][]snapshot.TraceEntry{{{TimeUS: 2, Flags: snapshot.FlagTime}}}, Annotations: []snapshot.Annotation{
		an("END", "stray", 0, 5),
		an("START", "ProfilerStep#0", 0, 10),
		an("START", "forward", 0, 12),
		an("START", "forward", 1, 12),
		an("START", "forward", 0, 14), // nested, same name
		an("END", "forward", 0, 16),
		an("END", "forward", 0, 20),
		an("START", "backward", 0, 21),
		an("END", "backward", 0, 30),
		an("END", "ProfilerStep#0", 0, 31),
		an("START", "ProfilerStep#1", 0, 40), // never ends
	}}
	for _, c := range []struct {
		t    int64
		want []string
	}{
		{1, nil},
		{2, []string{"stray"}},
		{4, []string{"stray"}},
		{5, nil},
		{10, []string{"ProfilerStep#0"}},
		{15, []string{"ProfilerStep#0", "forward", "forward"}},
		{16, []string{"ProfilerStep#0", "forward"}},
		{25, []string{"ProfilerStep#0", "backward"}},
		{30, []string{"ProfilerStep#0"}},
		{35, nil},
		{50, []string{"ProfilerStep#1"}},
		{60, []string{"ProfilerStep#1"}},
		{61, nil},
	} {
		if d := cmp.Diff(c.want, OpenAt(s, 0, c.t, 60)); d != "" {
			t.Errorf("at %d (-want +got):\n%s", c.t, d)
		}
	}
	if got := OpenAt(s, 1, 13, 60); !cmp.Equal(got, []string{"forward"}) {
		t.Errorf("device 1 at 13: %q, want forward", got)
	}
}

// TestRangesUnpaired: a START without END is Open and ends at the end
// given; an END without START is Unstarted and starts at the device's
// first entry, or at the END itself when the trace has no time_us or
// begins later.
func TestRangesUnpaired(t *testing.T) {
	an := func(stage, name string, us int64) snapshot.Annotation {
		return snapshot.Annotation{Stage: stage, Name: name, TimeUS: us}
	}
	anns := []snapshot.Annotation{an("END", "warmup", 50), an("START", "step", 60)}
	for _, c := range []struct {
		name  string
		trace []snapshot.TraceEntry
		start int64
	}{
		{"timed trace", []snapshot.TraceEntry{{TimeUS: 20, Flags: snapshot.FlagTime}}, 20},
		{"trace begins after the END", []snapshot.TraceEntry{{TimeUS: 70, Flags: snapshot.FlagTime}}, 50},
		{"no time_us", []snapshot.TraceEntry{{}}, 50},
		{"no trace", nil, 50},
	} {
		s := &snapshot.Snapshot{Traces: [][]snapshot.TraceEntry{c.trace}, Annotations: anns}
		want := []Range{{Name: "warmup", StartUS: c.start, EndUS: 50, Unstarted: true}, {Name: "step", StartUS: 60, EndUS: 90, Open: true}}
		if d := cmp.Diff(want, Ranges(s, 0, 90)); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, d)
		}
	}
}
