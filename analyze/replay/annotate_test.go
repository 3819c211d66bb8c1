package replay

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot"
)

// TestAnnotate: on testdata/snapshots/annotate.pickle (PyTorch 2.14-style,
// testdata/gen/annotate.py) the replay ends in the file's segments, the
// annotate entries change no figure (the same trace without them gives the
// same series, stats and peaks) and each is attached to the allocation
// live at its address, in trace order.
func TestAnnotate(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "annotate.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Check.Equal {
		t.Fatalf("replay differs from the file: %v", r.Check.Differences)
	}
	// The same file without its annotate entries.
	bare := *s
	bare.Traces = [][]snapshot.TraceEntry{slices.DeleteFunc(slices.Clone(s.Traces[0]), func(e snapshot.TraceEntry) bool {
		return e.Action == snapshot.ActionAnnotate
	})}
	if n := len(s.Traces[0]) - len(bare.Traces[0]); n != 3 {
		t.Fatalf("%d annotate entries, want 3", n)
	}
	rb, err := Run(&bare, 0, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rb.Check.Equal {
		t.Fatalf("replay without annotate differs: %v", rb.Check.Differences)
	}
	if d := cmp.Diff(rb.Stats, r.Stats); d != "" {
		t.Errorf("annotate entries changed the stats (-without +with):\n%s", d)
	}
	if rb.Peaks() != r.Peaks() {
		t.Errorf("peaks %+v with annotate entries, %+v without", r.Peaks(), rb.Peaks())
	}
	// The series of the annotated file, with the annotate entries' values
	// removed, are the bare file's.
	drop := func(v []int64) []int64 {
		var out []int64
		for i, x := range v {
			if s.Traces[0][i].Action != snapshot.ActionAnnotate {
				out = append(out, x)
			}
		}
		return out
	}
	for _, c := range []struct {
		name      string
		with, bar []int64
	}{{"allocated", r.Allocated, rb.Allocated}, {"reserved", r.Reserved, rb.Reserved}, {"active", r.Active, rb.Active}, {"requested", r.Requested, rb.Requested}} {
		if d := cmp.Diff(c.bar, drop(c.with)); d != "" {
			t.Errorf("%s series differ (-without +with):\n%s", c.name, d)
		}
	}
	if r.Peaks().Allocated != 4096+8192+1024 {
		t.Errorf("peak allocated %d, want 13312", r.Peaks().Allocated)
	}

	got := map[snapshot.Addr][]string{}
	for i := range r.Allocs {
		a := &r.Allocs[i]
		if l := a.AnnotationsAt(s, len(s.Traces[0])-1); l != nil {
			got[a.Addr] = l
		}
	}
	want := map[snapshot.Addr][]string{
		0x7F0000000000: {"saved for backward", "activation checkpoint"},
		0x7F0000001000: {"kv_cache layer 3"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("annotations (-want +got):\n%s", d)
	}
	// After entry 4 only the first annotation was made.
	for i := range r.Allocs {
		if a := &r.Allocs[i]; a.Addr == 0x7F0000000000 {
			if l := a.AnnotationsAt(s, 4); !slices.Equal(l, []string{"saved for backward"}) {
				t.Errorf("annotations after entry 4: %q", l)
			}
		}
	}
	if l := AnnotationLabel(want[0x7F0000000000]); l != "saved for backward; activation checkpoint" {
		t.Errorf("label %q", l)
	}
}
