package whatif

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

const sharedDir = "../../../shared/snapshots"

func sharedOrSkip(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(sharedDir); err != nil {
		t.Skipf("shared corpus absent (%v): skipping", err)
	}
	return sharedDir
}

// deviceTotal is the total_memory torch reported for the H200 the what-if
// recordings ran on (whatif/README: the cap is fraction x this).
const deviceTotal = 150110011392

// whatifRun is one recording of ../shared/snapshots/whatif.
type whatifRun struct {
	name     string // workload/setting
	workload string
	path     string
	meta     struct {
		AllocConf    string   `json:"alloc_conf"`
		CapBytes     *int64   `json:"cap_bytes"`
		Fraction     *float64 `json:"fraction"`
		OOM          bool     `json:"oom"`
		PeakReserved int64    `json:"peak_reserved"`
		PeakAlloc    int64    `json:"peak_allocated"`
		NumOOMs      int      `json:"num_ooms"`
		NumRetries   int64    `json:"num_alloc_retries"`
	}
	limit int64 // allowed_memory_maximum, 0 without a fraction
	snap  *snapshot.Snapshot
}

// capKey groups the runs recorded under the same cap.
func (w *whatifRun) capKey() int64 {
	if w.meta.CapBytes != nil {
		return *w.meta.CapBytes
	}
	return 0
}

func loadWhatif(t *testing.T) []*whatifRun {
	t.Helper()
	dir := filepath.Join(sharedOrSkip(t), "whatif")
	metas, _ := filepath.Glob(filepath.Join(dir, "*", "*", "meta.json"))
	if len(metas) == 0 {
		t.Skip("no what-if recordings in ../shared")
	}
	sort.Strings(metas)
	var runs []*whatifRun
	for _, m := range metas {
		d := filepath.Dir(m)
		w := &whatifRun{path: filepath.Join(d, "snapshot.pickle.xz"), workload: filepath.Base(filepath.Dir(d))}
		w.name = w.workload + "/" + filepath.Base(d)
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &w.meta); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if c := w.meta.CapBytes; c != nil {
			w.limit = *c
		} else if f := w.meta.Fraction; f != nil {
			// setMemoryFraction: static_cast<size_t>(fraction * device_total)
			w.limit = int64(math.Floor(*f * deviceTotal))
		}
		if w.snap, err = snapshot.Load(w.path); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, w)
	}
	return runs
}

func TestSelfCheckWhatif(t *testing.T) {
	for _, w := range loadWhatif(t) {
		res, err := Analyze(w.snap, 0, nil, Options{Limit: w.limit, Confs: []string{}})
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		own := res.Rows[0]
		t.Logf("%s: limit %d self-check %+v; peak reserved %d (meta %d), allocated %d (meta %d), retries %d (meta %d), ooms %d",
			w.name, w.limit, res.SelfCheck, own.PeakReserved, w.meta.PeakReserved, own.PeakAllocated, w.meta.PeakAlloc, own.AllocRetries, w.meta.NumRetries, own.OOMs)
		if !res.SelfCheck.Exact {
			t.Errorf("%s: self-check not exact: %+v", w.name, res.SelfCheck)
		}
		if own.PeakReserved != w.meta.PeakReserved || own.PeakAllocated != w.meta.PeakAlloc || own.OOMs != w.meta.NumOOMs {
			t.Errorf("%s: own settings give peak reserved %d, allocated %d, %d OOMs; memory_stats() had %d, %d, %d",
				w.name, own.PeakReserved, own.PeakAllocated, own.OOMs, w.meta.PeakReserved, w.meta.PeakAlloc, w.meta.NumOOMs)
		}
		if own.AllocRetries != w.meta.NumRetries {
			t.Errorf("%s: %d cudaMalloc retries, memory_stats() had %d", w.name, own.AllocRetries, w.meta.NumRetries)
		}
	}
}
