package replay

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// TestRetriesAgainstTorch: on every recording of the corpus that has
// torch's own memory_stats() beside it (stats.json), num_alloc_retries is
// torch's count where DecideTrust calls it exact, and torch's count lies
// in RetriesRange where the trace bounds it from both sides (the OOMs,
// and those plus each segment_alloc right after a release).
func TestRetriesAgainstTorch(t *testing.T) {
	var dirs []string
	for _, pat := range []string{"torch2.11/*", "whatif/*/*", "scaling/*/*"} {
		dirs = append(dirs, corpus.Glob(t, pat, 1)...)
	}
	exact, bounded := 0, 0
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, "stats.json"))
		if err != nil {
			continue
		}
		torch, err := stats.ParseStatsJSON(b, 0)
		if err != nil || len(torch) == 0 {
			t.Fatalf("%s: stats.json: %v", dir, err)
		}
		path := filepath.Join(dir, "snapshot.pickle")
		if _, err := os.Stat(path); err != nil {
			path += ".xz"
		}
		raw, err := snapshot.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := Complete(raw)
		if len(DeviceTrace(s, torch[0].Device)) == 0 {
			continue
		}
		r, err := Run(s, torch[0].Device, Options{Mode: StatsOnly})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		want, st := torch[0].NumAllocRetries, &r.Stats
		lo, hi, ok := st.RetriesRange()
		switch {
		case st.Known.NumAllocRetries == stats.Exact:
			exact++
			if st.NumAllocRetries != want {
				t.Errorf("%s: num_alloc_retries %d (exact), torch counted %d", dir, st.NumAllocRetries, want)
			}
		case ok:
			bounded++
			if want < lo || want > hi {
				t.Errorf("%s: num_alloc_retries %d to %d, torch counted %d", dir, lo, hi, want)
			}
		}
	}
	if exact < 40 || bounded < 7 {
		t.Errorf("%d recordings with exact retries and %d bounded from both sides, want at least 40 and 7", exact, bounded)
	}
}
