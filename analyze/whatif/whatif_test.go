package whatif

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// sharedOrSkip returns the shared corpus's snapshots directory, or ends
// the test when it is absent (see internal/corpus).
func sharedOrSkip(t *testing.T) string {
	t.Helper()
	return corpus.Dir(t)
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
	metas := corpus.Match(t, dir, "*/*/meta.json", 15)
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

// TestCrossSetting simulates each what-if recording A under the settings
// (and cap) of every other recording B of the same workload and cap, and
// compares the prediction with B's memory_stats(): peak reserved within
// 5% and the same OOM outcome. A recording that stopped at an OOM holds
// only the requests up to it: under a B that fits it must show no OOM and
// a peak reserved no higher than B's.
func TestCrossSetting(t *testing.T) {
	runs := loadWhatif(t)
	pairs, worst := 0, 0.0
	for _, a := range runs {
		for _, b := range runs {
			if a == b || a.workload != b.workload || a.capKey() != b.capKey() {
				continue
			}
			res, err := Analyze(a.snap, 0, nil, Options{Limit: b.limit, Confs: []string{b.meta.AllocConf}})
			if err != nil {
				t.Fatalf("%s under %s: %v", a.name, b.name, err)
			}
			got := res.Rows[1]
			pairs++
			dev := float64(got.PeakReserved-b.meta.PeakReserved) / float64(b.meta.PeakReserved)
			t.Logf("%-34s under %-34s peak reserved %12d vs %12d (%+.2f%%), oom %t vs %t (entry %d)",
				a.name, b.name, got.PeakReserved, b.meta.PeakReserved, 100*dev, !got.Fits(), b.meta.OOM, got.FirstOOM)
			if a.meta.OOM && !b.meta.OOM {
				if !got.Fits() || got.PeakReserved > b.meta.PeakReserved {
					t.Errorf("%s (stopped at an OOM) under %s: oom %t at entry %d, peak reserved %d; want no OOM and at most %d",
						a.name, b.name, !got.Fits(), got.FirstOOM, got.PeakReserved, b.meta.PeakReserved)
				}
				continue
			}
			worst = max(worst, math.Abs(dev))
			if math.Abs(dev) > 0.05 {
				t.Errorf("%s under %s: peak reserved %d, %s had %d (%+.1f%%)", a.name, b.name, got.PeakReserved, b.name, b.meta.PeakReserved, 100*dev)
			}
			if !got.Fits() != b.meta.OOM {
				t.Errorf("%s under %s: OOM %t (first at entry %d), %s: %t", a.name, b.name, !got.Fits(), got.FirstOOM, b.name, b.meta.OOM)
			}
		}
	}
	t.Logf("%d pairs; largest peak reserved deviation %.2f%%", pairs, 100*worst)
}

// TestSelfCheckTorch211 simulates every recording of ../shared/snapshots/torch2.11
// made from the first allocation under its own settings (and cap) and
// requires the self-check to be exact.
func TestSelfCheckTorch211(t *testing.T) {
	dir := filepath.Join(sharedOrSkip(t), "torch2.11")
	files := corpus.Match(t, dir, "*/snapshot.pickle", 17)
	n := 0
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		var meta struct {
			GroundTruth struct {
				FromStart  *bool  `json:"recorded_from_start"`
				LimitBytes *int64 `json:"limit_bytes"`
			} `json:"ground_truth"`
		}
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(f), "meta.json")); err == nil {
			json.Unmarshal(b, &meta)
		} else if b, err := os.ReadFile(filepath.Join(filepath.Dir(f), "snapshot.meta.json")); err == nil {
			json.Unmarshal(b, &meta)
		}
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		fromStart := meta.GroundTruth.FromStart == nil || *meta.GroundTruth.FromStart
		if name == "late_start" || name == "ring_overflow" {
			fromStart = false
		}
		var limit int64
		if l := meta.GroundTruth.LimitBytes; l != nil {
			limit = *l
		}
		for d := range s.Traces {
			if len(s.Traces[d]) == 0 || !fromStart {
				continue
			}
			res, err := Analyze(s, d, nil, Options{Limit: limit, Confs: []string{}})
			if err != nil {
				t.Fatalf("%s device %d: %v", name, d, err)
			}
			n++
			t.Logf("%s device %d: %d requests, %d empty_cache calls, limit %d: self-check %+v",
				name, d, res.Requests, res.EmptyCaches, limit, res.SelfCheck)
			if !res.SelfCheck.Exact {
				t.Errorf("%s device %d: self-check not exact: %+v", name, d, res.SelfCheck)
			}
		}
	}
	corpus.AtLeast(t, "torch2.11 device traces", n, 15)
}

// TestSelfCheckCanFail: the self-check notices a simulation that does not
// follow the file (here the file's own settings replaced by others, or a
// cap too low).
func TestSelfCheckCanFail(t *testing.T) {
	for _, w := range loadWhatif(t) {
		if w.name != "varlen_train/default" && w.name != "varlen_train/default_cap4656M" {
			continue
		}
		p := compileFor(t, w, w.limit)
		for _, conf := range []string{"max_split_size_mb:128", "expandable_segments:True", "roundup_power2_divisions:4"} {
			cfg, _ := allocator.Parse(conf)
			chk := newChecker(p)
			sm := newSim(p, cfg, w.limit, chk)
			chk.s = sm
			sc := chk.finish(sm.run())
			if sc.Exact || sc.Reason == "" {
				t.Errorf("%s simulated under %s: self-check %+v, want a divergence", w.name, conf, sc)
			}
		}
		if w.limit > 0 {
			res, err := Analyze(w.snap, 0, nil, Options{Limit: w.limit - 300<<20, Confs: []string{}})
			if err != nil {
				t.Fatal(err)
			}
			if res.SelfCheck.Exact || res.SelfCheck.DivergedAt < 0 {
				t.Errorf("%s under a cap 300 MiB too low: self-check %+v, want a divergence at an entry", w.name, res.SelfCheck)
			}
			t.Logf("%s under a cap 300 MiB too low: %+v", w.name, res.SelfCheck)
		}
	}
}

func compileFor(t *testing.T, w *whatifRun, limit int64) *program {
	t.Helper()
	r, err := replay.Run(w.snap, 0, replay.Options{Mode: replay.StatsOnly})
	if err != nil {
		t.Fatal(err)
	}
	return compile(w.snap, r, allocator.FromSettings(w.snap.Settings), limit)
}

// TestCandidateTable: the candidate table of varlen_train's default run,
// uncapped and under the 4656 MiB cap, predicts each setting that was
// also recorded: the same OOM outcome and a peak reserved within 5% of
// the recording's.
func TestCandidateTable(t *testing.T) {
	runs := loadWhatif(t)
	byName := map[string]*whatifRun{}
	for _, w := range runs {
		byName[w.name] = w
	}
	for _, suffix := range []string{"", "_cap4656M"} {
		base := byName["varlen_train/default"+suffix]
		if base == nil {
			t.Skip("varlen_train recordings absent")
		}
		res, err := Analyze(base.snap, 0, nil, Options{Limit: base.limit})
		if err != nil {
			t.Fatal(err)
		}
		if !res.SelfCheck.Exact {
			t.Errorf("%s: self-check %+v", base.name, res.SelfCheck)
		}
		matched := 0
		for _, w := range runs {
			if w.workload != "varlen_train" || w.capKey() != base.capKey() || w == base {
				continue
			}
			want, _ := allocator.Parse(w.meta.AllocConf)
			for _, row := range res.Rows[1:] {
				if row.Config != want {
					continue
				}
				matched++
				dev := float64(row.PeakReserved-w.meta.PeakReserved) / float64(w.meta.PeakReserved)
				t.Logf("%s row %q: peak reserved %d, recorded %d (%+.2f%%); oom %t, recorded %t",
					base.name, row.Conf, row.PeakReserved, w.meta.PeakReserved, 100*dev, !row.Fits(), w.meta.OOM)
				if !row.Fits() != w.meta.OOM || math.Abs(dev) > 0.05 {
					t.Errorf("%s row %q: peak reserved %d, oom %t; %s recorded %d, oom %t",
						base.name, row.Conf, row.PeakReserved, !row.Fits(), w.name, w.meta.PeakReserved, w.meta.OOM)
				}
			}
		}
		// expandable, max_split_128 and roundup_4 always; gc_06 only under
		// the cap (the uncapped gc_06 recording ran under a 60 GiB fraction,
		// a cap the default run did not have).
		if want := map[string]int{"": 3, "_cap4656M": 4}[suffix]; matched != want {
			t.Errorf("%s: %d candidate rows match a recording, want %d", base.name, matched, want)
		}
	}
}

// TestSelfCheckPublic: the self-check is exact on every device trace of
// the public snapshots (torch 2.0 to 2.10) and the torch2.11 probes, the
// cap, where one applied, inferred from the OOM.
func TestSelfCheckPublic(t *testing.T) {
	dir := sharedOrSkip(t)
	var files []string
	for _, g := range []struct {
		glob string
		min  int
	}{{"public/*.pickle", 34}, {"public/*.json", 0}, {"torch2.11-probe/*.pickle", 13}} {
		files = append(files, corpus.Match(t, dir, g.glob, g.min)...)
	}
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
			if !res.SelfCheck.Exact {
				t.Errorf("%s device %d: self-check %+v", filepath.Base(f), d, res.SelfCheck)
			}
		}
	}
	t.Logf("%d device traces", n)
	corpus.AtLeast(t, "device traces of public files and probes", n, 39)
}
