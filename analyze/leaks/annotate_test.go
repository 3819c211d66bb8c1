package leaks

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// TestLeakAnnotations: the groups of testdata/snapshots/annotate.pickle carry
// the annotations of their live allocations, both when the replay ends in
// the file's segments and when it does not (the file's blocks are then the
// live allocations, and the annotations come from the trace alone).
func TestLeakAnnotations(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "annotate.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	// Without the free of the third allocation the replay keeps it live
	// while the file has it inactive: the replay differs.
	broken := *s
	broken.Traces = [][]snapshot.TraceEntry{slices.DeleteFunc(slices.Clone(s.Traces[0]), func(e snapshot.TraceEntry) bool {
		return e.Action == snapshot.ActionFreeRequested || e.Action == snapshot.ActionFreeCompleted
	})}
	want := map[string]int64{"kv_cache layer 3": 8192, "saved for backward; activation checkpoint": 4096}
	for _, tc := range []struct {
		name  string
		s     *snapshot.Snapshot
		exact bool
	}{{"exact", s, true}, {"replay differs", &broken, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := replay.Run(tc.s, 0, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Check.Equal != tc.exact {
				t.Fatalf("replay equal %v, want %v", r.Check.Equal, tc.exact)
			}
			rep, err := Leaks(tc.s, r, DefaultLeakOptions(r))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, g := range rep.Groups {
				for _, a := range g.Annotations {
					got[a.Label] += a.Bytes
				}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("annotations (-want +got):\n%s", d)
			}
		})
	}
}

// TestLeaksByAnnotation: ByAnnotation keys groups by annotation label up to
// At: at the end two groups (8192 and 4096 B); after entry 4 the first
// allocation has only its first annotation and the two others, of two
// stacks, share the group without one.
func TestLeaksByAnnotation(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "annotate.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	type grp struct {
		Bytes  int64
		Count  int
		Stacks int
	}
	for _, tc := range []struct {
		at   int
		want map[string]grp
	}{
		{9, map[string]grp{"kv_cache layer 3": {8192, 1, 1}, "saved for backward; activation checkpoint": {4096, 1, 1}}},
		{4, map[string]grp{"": {8192 + 1024, 2, 2}, "saved for backward": {4096, 1, 1}}},
	} {
		opts := DefaultLeakOptions(r)
		opts.At, opts.ByAnnotation = tc.at, true
		rep, err := Leaks(s, r, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.ByAnnotation {
			t.Errorf("at %d: report not marked ByAnnotation", tc.at)
		}
		got := map[string]grp{}
		for _, g := range rep.Groups {
			got[g.Label] = grp{g.Bytes, g.Count, g.Stacks}
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("at %d: groups (-want +got):\n%s", tc.at, d)
		}
	}
}
