package snapshot

import (
	"os"
	"path/filepath"
	"testing"
)

// sharedDir returns ../shared/snapshots or skips the test.
func sharedSnapshots(t testing.TB) string {
	t.Helper()
	dir := filepath.Join("..", "..", "shared", "snapshots")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("real snapshots not found at %s (../shared is absent): %v", dir, err)
	}
	return dir
}

func realFiles(t testing.TB) []string {
	dir := sharedSnapshots(t)
	var out []string
	for _, pat := range []string{"torch2.11/*/snapshot.pickle", "torch2.11-probe/*.pickle", "public/*.pickle"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		out = append(out, m...)
	}
	if len(out) == 0 {
		t.Skip("no real snapshots found")
	}
	return out
}

// TestDecodeRealFiles decodes every real snapshot under ../shared and
// checks the model's invariants.
func TestDecodeRealFiles(t *testing.T) {
	for _, f := range realFiles(t) {
		rel, _ := filepath.Rel(sharedSnapshots(t), f)
		t.Run(rel, func(t *testing.T) {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.CheckValid(); err != nil {
				t.Errorf("CheckValid: %v", err)
			}
		})
	}
}
