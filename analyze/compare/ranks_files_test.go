package compare

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCompareNatural(t *testing.T) {
	got := []string{"rank10.pickle", "rank2.pickle", "rank1.pickle", "a.pickle", "rank02b.pickle"}
	slices.SortFunc(got, CompareNatural)
	want := []string{"a.pickle", "rank1.pickle", "rank2.pickle", "rank02b.pickle", "rank10.pickle"}
	if !slices.Equal(got, want) {
		t.Errorf("natural order: %v, want %v", got, want)
	}
}

// TestRankFiles: a directory expands to its snapshot files below it in
// natural order (meta.json and stats.json left out); a list of files is
// kept as it is; a directory without a snapshot is ErrNoRankFiles.
func TestRankFiles(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{"a/rank10.pickle", "a/rank2.pickle", "a/meta.json", "b/stats.json", "b/rank3.json", "notes.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, d, err := RankFiles([]string{dir})
	want := []string{filepath.Join(dir, "a", "rank2.pickle"), filepath.Join(dir, "a", "rank10.pickle"), filepath.Join(dir, "b", "rank3.json")}
	if err != nil || d != dir || !slices.Equal(files, want) {
		t.Errorf("RankFiles(dir) = %q, %q, %v; want %q", files, d, err, want)
	}
	if files, d, err := RankFiles([]string{"x", "y"}); err != nil || d != "" || !slices.Equal(files, []string{"x", "y"}) {
		t.Errorf("RankFiles(x, y) = %q, %q, %v", files, d, err)
	}
	empty := t.TempDir()
	if _, _, err := RankFiles([]string{empty}); !errors.Is(err, ErrNoRankFiles) {
		t.Errorf("RankFiles(empty dir): %v, want ErrNoRankFiles", err)
	}
	g := GroupRankFiles(dir, files)
	if len(g) != 1 || len(g[0].Files) != 3 || g[0].Name() != "files without a step" {
		t.Errorf("GroupRankFiles: %+v", g)
	}
}
