package forecast

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// point is one uncapped point of a recorded series with torch's peaks
// (meta.json: memory_stats()' allocated_bytes.all.peak and
// reserved_bytes.all.peak).
type point struct {
	dir           string
	value         int64
	peakAllocated int64
	peakReserved  int64
}

// scalingRoots returns the folders that hold series laid out as the
// corpus's scaling/ (README there): <workload>/<param>_<value>/: the
// corpus's when it is present (internal/corpus: required under
// SNAPVIEW_CORPUS), the repository's testdata/snapshots/scaling, and any
// SNAPVIEW_SCALING names (a folder of new recordings).
func scalingRoots(t testing.TB) []string {
	var out []string
	if dir := corpus.Find(t); dir != "" {
		out = append(out, filepath.Join(dir, "scaling"))
	}
	out = append(out, filepath.Join("..", "..", "testdata", "snapshots", "scaling"))
	return append(out, filepath.SplitList(os.Getenv("SNAPVIEW_SCALING"))...)
}

// sharedScaling returns the corpus's scaling/ folder, or ends t as
// corpus.Dir does.
func sharedScaling(t testing.TB) string { return filepath.Join(corpus.Dir(t), "scaling") }

// seriesOf returns the uncapped points of a workload, by value; nil when
// the folder is absent.
func seriesOf(t testing.TB, root, workload string) []point {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(root, workload, "*"))
	var out []point
	for _, d := range dirs {
		if strings.Contains(filepath.Base(d), "_cap") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(d, "meta.json"))
		if err != nil {
			continue
		}
		var m struct {
			Value         int64 `json:"value"`
			PeakAllocated int64 `json:"peak_allocated"`
			PeakReserved  int64 `json:"peak_reserved"`
			OOM           bool  `json:"oom"`
			Cap           any   `json:"cap_bytes"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if m.OOM || m.Cap != nil {
			continue
		}
		if _, err := os.Stat(snapPath(d)); err != nil {
			continue
		}
		out = append(out, point{dir: d, value: m.Value, peakAllocated: m.PeakAllocated, peakReserved: m.PeakReserved})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].value < out[j].value })
	return out
}

func snapPath(dir string) string {
	for _, n := range []string{"snapshot.pickle.xz", "snapshot.pickle"} {
		if p := filepath.Join(dir, n); fileExists(p) {
			return p
		}
	}
	return filepath.Join(dir, "snapshot.pickle.xz")
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

var (
	loadMu sync.Mutex
	loaded = map[string]*snapshot.Snapshot{}
)

// load decodes (once per test binary) a point's snapshot, completed as the
// command completes it.
func load(t testing.TB, dir string) *snapshot.Snapshot {
	t.Helper()
	loadMu.Lock()
	defer loadMu.Unlock()
	if s, ok := loaded[dir]; ok {
		return s
	}
	s, err := snapshot.Load(snapPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	s, _ = replay.Complete(s)
	loaded[dir] = s
	return s
}

func filesOf(t testing.TB, pts []point) []File {
	var out []File
	for _, p := range pts {
		out = append(out, File{Name: filepath.Join(filepath.Base(filepath.Dir(p.dir)), filepath.Base(p.dir)), Value: p.value, Snap: load(t, p.dir)})
	}
	return out
}

// workloadsIn lists the workload folders of a scaling root.
func workloadsIn(root string) []string {
	ents, _ := os.ReadDir(root)
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// noSeries ends a test that found none of what it loops over: a failure
// when the corpus is required (SNAPVIEW_CORPUS), else a skip.
func noSeries(t testing.TB, what string) {
	t.Helper()
	if corpus.Required() {
		t.Fatalf("%s under %v", what, scalingRoots(t))
	}
	t.Skip(what)
}
