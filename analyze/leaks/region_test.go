package leaks

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// TestLeaksByRegion: on the torch.compile recording (compiled_regions,
// compile_context=True) ByRegion groups the 105,961,472 live bytes at the
// end into the two regions holding live allocations and the rest outside
// any region, and each region's bytes equal what the stack groups name
// for that region (LeakGroup.Regions): the two views agree.
func TestLeaksByRegion(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "compiled_regions", "snapshot.pickle.xz"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultLeakOptions(r)
	opts.Top = 1000
	byStack, err := Leaks(s, r, opts)
	if err != nil {
		t.Fatal(err)
	}
	fromStacks := map[string]int64{}
	var inRegions int64
	for _, g := range byStack.Groups {
		for _, rb := range g.Regions {
			fromStacks[rb.Region] += rb.Bytes
			inRegions += rb.Bytes
		}
	}
	fromStacks[""] = byStack.LiveBytes - inRegions

	opts.ByRegion = true
	rep, err := Leaks(s, r, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.ByRegion || rep.ByAnnotation {
		t.Errorf("report ByRegion %v ByAnnotation %v, want true, false", rep.ByRegion, rep.ByAnnotation)
	}
	got := map[string]int64{}
	for _, g := range rep.Groups {
		got[g.Label] = g.Bytes
	}
	want := map[string]int64{"": 71358464, "Torch-Compiled Region: 0/0": 33554432, "Torch-Compiled Region: 1/0": 1048576}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("groups by region (-want +got):\n%s", d)
	}
	if d := cmp.Diff(fromStacks, got); d != "" {
		t.Errorf("by region vs the regions of the stack groups (-stacks +regions):\n%s", d)
	}
	if rep.LiveBytes != 105961472 {
		t.Errorf("live bytes %d, want 105,961,472", rep.LiveBytes)
	}
	// --by-annotation wins over ByRegion.
	opts.ByAnnotation = true
	if rep, err = Leaks(s, r, opts); err != nil || rep.ByRegion || !rep.ByAnnotation {
		t.Errorf("both set: ByRegion %v ByAnnotation %v (%v), want the annotation", rep.ByRegion, rep.ByAnnotation, err)
	}
}
