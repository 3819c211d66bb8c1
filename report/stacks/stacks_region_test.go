package stacks

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestInductorFilesNamedByRegion: on a real torch.compile recording with
// compile_context (testdata/snapshots/compiled_regions: two compiled
// blocks, regions 0/0, 1/0, 0/1, 1/1), the stack views name inductor's
// generated files by the region whose entries ran them, not by their
// temporary path; raw frames (JSON) keep the file's path; a file that no
// entry with a region ran keeps its path too.
func TestInductorFilesNamedByRegion(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "compiled_regions", "snapshot.pickle.xz"))
	if err != nil {
		t.Fatal(err)
	}
	regions := inductorRegions(s)
	if len(regions) == 0 {
		t.Fatal("no generated file tied to a region")
	}
	seen := map[string]bool{}
	for fn, r := range regions {
		if !isInductorFile(fn) || !strings.HasPrefix(r, regionPrefix) {
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
			if fn := s.Frames[f].Filename; isInductorFile(fn) && regions[fn] == ctx {
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
