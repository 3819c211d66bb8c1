package snapshot

import (
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
)

// sharedSnapshots returns the shared corpus's snapshots directory (see
// internal/corpus), or ends the test when the corpus is absent.
func sharedSnapshots(t testing.TB) string { return corpus.Dir(t) }

// realFiles returns the corpus's real snapshots: the torch 2.11
// recordings, the probes and the public files (64 today).
func realFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/snapshot.pickle", 17}, {"torch2.11-probe/*.pickle", 13}, {"public/*.pickle", 34}} {
		out = append(out, corpus.Glob(t, pat.glob, pat.min)...)
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
