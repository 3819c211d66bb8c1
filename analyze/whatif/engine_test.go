package whatif

import (
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/snapshot"
)

// corpusTraces lists the snapshot files of ../shared that may hold a
// trace (every recording folder's snapshot, the public files, the
// scaling and what-if series) and this repository's what-if recordings.
func corpusTraces(t *testing.T) []string {
	t.Helper()
	dir := sharedOrSkip(t)
	var files []string
	for _, g := range []string{"torch2.11/*/snapshot.pickle", "torch2.11-probe/*.pickle", "public/*.pickle", "public/*.json",
		"whatif/*/*/snapshot.pickle.xz", "scaling/*/*/snapshot.pickle.xz", "scaling/*/*/snapshot.pickle"} {
		m, _ := filepath.Glob(filepath.Join(dir, g))
		files = append(files, m...)
	}
	for _, dir := range whatifDirs(t)[1:] {
		m, _ := filepath.Glob(filepath.Join(dir, "*", "*", "snapshot.pickle*"))
		files = append(files, m...)
	}
	return files
}

// TestOwnConfIsFileRow: on every device trace of the corpus, --conf with
// the file's own settings is the same simulation as the file's row: the
// same outcome in every figure (one engine path; the cudaMalloc addresses
// are chosen the same way in both).
func TestOwnConfIsFileRow(t *testing.T) {
	n := eachDeviceTrace(t, corpusTraces(t), func(f string, s *snapshot.Snapshot, d int, res *Result) {
		own := res.Rows[0].Config
		if own.Rounding != nil {
			return // a producer's own rounding has no PYTORCH_CUDA_ALLOC_CONF text
		}
		conf := own.String()
		if c, err := allocator.Parse(conf); err != nil || c != own {
			t.Fatalf("%s: %q does not parse back to the file's settings", f, conf)
		}
		res2, err := Analyze(s, d, nil, Options{Confs: []string{conf}})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := res2.Rows[0].Outcome, res2.Rows[1].Outcome; a != b || res.Rows[0].Outcome != a {
			t.Errorf("%s device %d: file row %+v, --conf %q %+v", f, d, a, conf, b)
		}
		if a, b := res2.Rows[0].Cap, res2.Rows[1].Cap; (a == nil) != (b == nil) || a != nil && *a != *b {
			t.Errorf("%s device %d: over the cap interval, file row %+v, --conf %q %+v", f, d, a, conf, b)
		}
	})
	t.Logf("%d device traces", n)
}

// eachDeviceTrace analyzes every device trace of the files that load as
// snapshots (the file's settings alone, the cap as inferred) and calls fn
// with each; it returns their number.
func eachDeviceTrace(t *testing.T, files []string, fn func(f string, s *snapshot.Snapshot, d int, res *Result)) int {
	t.Helper()
	n := 0
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			continue // not every file there is a snapshot with a trace
		}
		for d := range s.Traces {
			if len(s.Traces[d]) == 0 {
				continue
			}
			res, err := Analyze(s, d, nil, Options{Confs: []string{}})
			if err != nil {
				t.Fatalf("%s device %d: %v", f, d, err)
			}
			n++
			fn(f, s, d, res)
		}
	}
	return n
}
