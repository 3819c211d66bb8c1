package export

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// sharedDirs returns the torch 2.11 folders of the shared corpus (all 17),
// or ends the test when the corpus is absent (see internal/corpus).
func sharedDirs(t *testing.T) []string {
	t.Helper()
	return corpus.Glob(t, "torch2.11/*", 17)
}

func loadShared(t *testing.T, dir string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(dir, "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sortedLines(b []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		lines = nil
	}
	slices.Sort(lines)
	return lines
}

// TestFoldedMatchesMemviz: the lines equal `_memory_viz memory|segments`'s
// as multisets, on every torch 2.11 recording.
func TestFoldedMatchesMemviz(t *testing.T) {
	for _, dir := range sharedDirs(t) {
		s := loadShared(t, dir)
		for _, c := range []struct {
			view FoldedView
			file string
		}{{FoldedMemory, "memviz_memory.collapsed"}, {FoldedSegments, "memviz_segments.collapsed"}} {
			want, err := os.ReadFile(filepath.Join(dir, c.file))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := WriteFolded(&got, s, FileSegments(s), FoldedOptions{View: c.view}); err != nil {
				t.Fatal(err)
			}
			g, w := sortedLines(got.Bytes()), sortedLines(want)
			if !slices.Equal(g, w) {
				t.Errorf("%s: %s: %d lines, want %d; first difference:\n%s", filepath.Base(dir), c.file, len(g), len(w), firstDiff(g, w))
			}
		}
	}
}

func firstDiff(g, w []string) string {
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "got:  " + a + "\nwant: " + b
		}
	}
	return ""
}

// TestSlicesFoldedMatchMemviz: the folded stacks of each slice and
// conversion in testdata/slices (written by snapview slice and convert)
// are the lines PyTorch's _memory_viz memory and segments make of the same
// file (recorded on the device machine with torch 2.11:
// testdata/gen/memviz_collapsed.py).
func TestSlicesFoldedMatchMemviz(t *testing.T) {
	dir := filepath.Join("..", "testdata", "slices")
	files, err := filepath.Glob(filepath.Join(dir, "*.memviz_memory.collapsed"))
	if err != nil || len(files) < 11 {
		t.Fatalf("%d reference files in %s (%v), want at least 11", len(files), dir, err)
	}
	for _, ref := range files {
		name := strings.TrimSuffix(filepath.Base(ref), ".memviz_memory.collapsed")
		path := filepath.Join(dir, name+".pickle")
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join(dir, name+".json")
		}
		s, err := snapshot.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			view FoldedView
			file string
		}{{FoldedMemory, ".memviz_memory.collapsed"}, {FoldedSegments, ".memviz_segments.collapsed"}} {
			want, err := os.ReadFile(filepath.Join(dir, name+c.file))
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := WriteFolded(&got, s, FileSegments(s), FoldedOptions{View: c.view}); err != nil {
				t.Fatal(err)
			}
			g, w := sortedLines(got.Bytes()), sortedLines(want)
			if !slices.Equal(g, w) {
				t.Errorf("%s: %s: %d lines, want %d; first difference:\n%s", name, c.file, len(g), len(w), firstDiff(g, w))
			}
		}
	}
}

// TestWriteFoldedFiles: one file's lines have no root frame; of several,
// each line starts with its file's name, "#2" on a file given twice.
func TestWriteFoldedFiles(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	f := foldedFile{Snap: s, Name: "a;b", Parts: [][]FoldedSegment{FileSegments(s)}}
	roots := func(files ...foldedFile) map[string]int {
		var b bytes.Buffer
		if err := writeFoldedFiles(&b, files, FoldedOptions{}); err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, l := range sortedLines(b.Bytes()) {
			root, _, _ := strings.Cut(l, ";")
			out[root]++
		}
		return out
	}
	one := roots(f)
	if _, ok := one["a"]; ok || len(one) == 0 {
		t.Errorf("one file: roots %v, want none", one)
	}
	two := roots(f, f)
	n := 0
	for _, c := range one {
		n += c
	}
	if len(two) != 2 || two["a_b"] != n || two["a_b#2"] != n {
		t.Errorf("a file twice: roots %v, want a_b and a_b#2 with %d lines each", two, n)
	}
}
