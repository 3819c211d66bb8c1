package stacks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/snapshot"
)

const regionPrefix = frames.RegionPrefix

// TestInductorFilesNamedByRegion: on a real torch.compile recording with
// compile_context (testdata/snapshots/compiled_regions: two compiled
// blocks, regions 0/0, 1/0, 0/1, 1/1), the stack views name inductor's
// generated files by the region whose entries ran them, not by their
// temporary path; raw frames (JSON) keep the file's path. A generated
// file no entry with a region ran (the recording's backward graph,
// ty/ctyg4u6q….py:442 call, whose entries read "N/A") is named as
// generated code: no stack line of the recording shows a temporary path.
func TestInductorFilesNamedByRegion(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "compiled_regions", "snapshot.pickle.xz"))
	if err != nil {
		t.Fatal(err)
	}
	regions := frames.InductorRegions(s)
	if len(regions) == 0 {
		t.Fatal("no generated file tied to a region")
	}
	seen := map[string]bool{}
	for fn, r := range regions {
		if !frames.InductorFile(fn) || !strings.HasPrefix(r, regionPrefix) {
			t.Errorf("%s -> %q", fn, r)
		}
		seen[r] = true
	}
	for _, r := range []string{"0/0", "1/0"} {
		if !seen[regionPrefix+r] {
			t.Errorf("no generated file of region %s (%d files mapped)", r, len(regions))
		}
	}
	ft := NewFrameTable(s)
	checked := 0
	for i := range s.Traces[0] {
		e := &s.Traces[0][i]
		ctx := s.Strings[e.CompileContext]
		if !strings.HasPrefix(ctx, regionPrefix) || e.Action != snapshot.ActionAlloc {
			continue
		}
		var file string
		for _, f := range s.Stack(e.Stack) {
			if fn := s.Frames[f].Filename; frames.InductorFile(fn) && regions[fn] == ctx {
				file = fn
			}
		}
		if file == "" {
			continue
		}
		text := strings.Join(ft.Lines(e.Stack, LineOptions{}), "\n")
		want := strings.Replace(ctx, ": ", " ", 1) + " (inductor "
		if !strings.Contains(text, want) || strings.Contains(text, "torchinductor_") {
			t.Fatalf("entry %d (%s): stack lines\n%s\nwant %q and no temporary path", i, ctx, text, want)
		}
		raw := strings.Join(ft.Lines(e.Stack, LineOptions{Full: true, Raw: true}), "\n")
		if !strings.Contains(raw, file) {
			t.Fatalf("entry %d: raw frames lost the file's path %s:\n%s", i, file, raw)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no alloc entry of a region runs a mapped generated file")
	}
}

// TestNoTemporaryInductorPath: every stack line of the compiled_regions
// recording names its generated files, the ones outside any region
// included: "inductor-generated code (ctyg4u6q….py):442 call".
func TestNoTemporaryInductorPath(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "compiled_regions", "snapshot.pickle.xz"))
	if err != nil {
		t.Fatal(err)
	}
	ft := NewFrameTable(s)
	outside := 0
	for i := range s.Stacks {
		text := strings.Join(ft.Lines(snapshot.StackID(i), LineOptions{Full: true}), "\n")
		if strings.Contains(text, "torchinductor_") {
			t.Fatalf("stack %d shows a temporary path:\n%s", i, text)
		}
		if strings.Contains(text, "inductor-generated code (ctyg4u6q….py):442 call") {
			outside++
		}
	}
	if outside == 0 {
		t.Error("no stack runs ty/ctyg4u6q….py:442 call, the generated file outside any region")
	}
}
