package whatif

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
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
		OOMMessage   string   `json:"oom_message"`
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

// whatifDirs are the folders of what-if recordings: ../shared's, this
// repository's testdata/snapshots/whatif, and $SNAPVIEW_WHATIF_REC.
func whatifDirs(t *testing.T) []string {
	dirs := []string{filepath.Join(sharedOrSkip(t), "whatif"), filepath.Join("..", "..", "testdata", "snapshots", "whatif")}
	if d := os.Getenv("SNAPVIEW_WHATIF_REC"); d != "" {
		dirs = append(dirs, d)
	}
	return dirs
}

func loadWhatif(t *testing.T) []*whatifRun {
	t.Helper()
	metas := corpus.Match(t, filepath.Join(sharedOrSkip(t), "whatif"), "*/*/meta.json", 15)
	for _, dir := range whatifDirs(t)[1:] {
		m, _ := filepath.Glob(filepath.Join(dir, "*", "*", "meta.json"))
		metas = append(metas, m...)
	}
	sort.Strings(metas)
	var runs []*whatifRun
	for _, m := range metas {
		d := filepath.Dir(m)
		w := &whatifRun{path: filepath.Join(d, "snapshot.pickle.xz"), workload: filepath.Base(filepath.Dir(d))}
		if _, err := os.Stat(w.path); err != nil {
			continue
		}
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
	n := eachDeviceTrace(t, files, func(f string, _ *snapshot.Snapshot, d int, res *Result) {
		if !res.SelfCheck.Exact {
			t.Errorf("%s device %d: self-check %+v", filepath.Base(f), d, res.SelfCheck)
		}
	})
	t.Logf("%d device traces", n)
	corpus.AtLeast(t, "device traces of public files and probes", n, 39)
}

// TestInferredCap: on every capped what-if recording, without a cap
// given, the cap is inferred (from the OOM, or from the frees of cached
// segments before new segments) as bounds that hold the real cap, the
// file's row reproduces the file under the lower bound, and the verdict
// over the bounds says right whether each other recording of the
// workload under that cap ran out of memory (it fits from a cap at most
// the real one, or not). With the recording's OOM message the bounds hold
// the cap too.
func TestInferredCap(t *testing.T) {
	runs := loadWhatif(t)
	for _, a := range runs {
		if a.meta.CapBytes == nil {
			continue
		}
		var confs []string
		var others []*whatifRun
		for _, b := range runs {
			if b != a && b.workload == a.workload && b.capKey() == a.capKey() {
				confs = append(confs, b.meta.AllocConf)
				others = append(others, b)
			}
		}
		res, err := Analyze(a.snap, 0, nil, Options{Confs: confs})
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := res.Limit, res.Limit
		if b := res.Inferred; b != nil {
			lo, hi = b.Min, b.Max
		}
		t.Logf("%s: %s cap [%d, %d] (real %d), self-check %v", a.name, res.LimitSource, lo, hi, a.limit, res.SelfCheck.Exact)
		if res.LimitSource == LimitNone {
			if a.meta.OOM {
				t.Errorf("%s: an OOM and no cap inferred", a.name)
			}
			continue // no frees to make room: the cap never acted
		}
		if lo > a.limit || hi < a.limit {
			t.Errorf("%s: %s bounds [%d, %d] miss the real cap %d", a.name, res.LimitSource, lo, hi, a.limit)
		}
		if !res.SelfCheck.Exact {
			t.Errorf("%s: self-check under the inferred cap: %+v", a.name, res.SelfCheck)
		}
		for i, b := range others {
			got := &res.Rows[i+1]
			if a.meta.OOM && !b.meta.OOM {
				continue // a stopped at its OOM: fewer requests than b made
			}
			// Whether the verdict says it fits at the real cap.
			fits := got.Fits()
			if c := got.Cap; c != nil {
				fits = c.From > 0 && c.From <= a.limit
			}
			t.Logf("  under %q: fits at the real cap %t (cap fit %+v), recorded oom %t", b.meta.AllocConf, fits, got.Cap, b.meta.OOM)
			if fits == b.meta.OOM {
				t.Errorf("%s under %q: the verdict over [%d, %d] says fits at the real cap %d: %t; %s recorded an OOM: %t",
					a.name, b.meta.AllocConf, lo, hi, a.limit, fits, b.name, b.meta.OOM)
			}
		}
		if a.meta.OOMMessage != "" {
			msg, err := ParseOOMMessage(a.meta.OOMMessage)
			if err != nil {
				t.Fatalf("%s: %v", a.name, err)
			}
			res, err := Analyze(a.snap, 0, nil, Options{Confs: []string{}, OOMMessage: msg})
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := res.Limit, res.Limit
			if b := res.Inferred; b != nil {
				lo, hi = b.Min, b.Max
			}
			if res.LimitSource != LimitOOMMessage || lo > a.limit || hi < a.limit {
				t.Errorf("%s with its OOM message: %s [%d, %d], real cap %d", a.name, res.LimitSource, lo, hi, a.limit)
			}
		}
	}
}

// TestPathologies: the allocator behaviours users pick settings from,
// simulated from one recording and compared with the recording made
// under the setting (rec's testdata/snapshots/whatif; skipped without
// them): pytorch#123548 (max_split_size_mb:128 with expandable_segments,
// where a kept 2 MiB tensor fences each freed range off the segment's
// unmapped tail: get_free_block's max_split_size filter and
// release_cached_blocks unmapping whole free pages), vLLM#41268 (weights
// pinned in cached blocks they split; max_split_size_mb:20 avoids it under
// the cap), garbage_collection_threshold under a cap
// (garbage_collect_cached_blocks) on the Llama run that runs out of
// memory in its 4th step (a 902 MiB request in rec's recording).
func TestPathologies(t *testing.T) {
	byName := map[string]*whatifRun{}
	for _, w := range loadWhatif(t) {
		byName[w.name] = w
	}
	cases := []struct {
		from, under string
		check       func(t *testing.T, got Outcome, from *whatifRun)
	}{
		{"pt123548/default", "pt123548/max_split_128_expandable", func(t *testing.T, got Outcome, _ *whatifRun) {
			// Either setting alone stays near the default's 2.9 GiB.
			if got.PeakReserved < 10*byName["pt123548/expandable"].meta.PeakReserved {
				t.Errorf("the combination reserves %d, not the runaway growth", got.PeakReserved)
			}
		}},
		{"vllm_load/default_cap7680M", "vllm_load/max_split_20_cap7680M", nil},
		{"vllm_load/max_split_20_cap7680M", "vllm_load/default_cap7680M", nil},
		{"llama_varlen/default_cap5360M", "llama_varlen/gc_06_cap5360M", func(t *testing.T, got Outcome, from *whatifRun) {
			// The request the gc_06 run failed (902 MiB, in its 4th step).
			gc := byName["llama_varlen/gc_06_cap5360M"].snap.Traces[0]
			k := slices.IndexFunc(gc, func(e snapshot.TraceEntry) bool { return e.Action == snapshot.ActionOOM })
			if e := from.snap.Traces[0][got.FirstOOM]; k < 0 || e.Action != snapshot.ActionOOM || e.Size != gc[k].Size {
				t.Errorf("first OOM at entry %d (%s of %d bytes), want the request the gc_06 run failed", got.FirstOOM, e.Action, e.Size)
			}
		}},
	}
	n := 0
	for _, c := range cases {
		a, b := byName[c.from], byName[c.under]
		if a == nil || b == nil {
			continue
		}
		n++
		res, err := Analyze(a.snap, 0, nil, Options{Limit: b.limit, Confs: []string{b.meta.AllocConf}})
		if err != nil {
			t.Fatal(err)
		}
		got := res.Rows[1].Outcome
		t.Logf("%s under %q: peak reserved %d (recorded %d), oom %t (recorded %t)", a.name, b.meta.AllocConf,
			got.PeakReserved, b.meta.PeakReserved, got.OOMs > 0, b.meta.OOM)
		if got.OOMs > 0 != b.meta.OOM {
			t.Errorf("%s under %q: oom %t, recorded %t", a.name, b.meta.AllocConf, got.OOMs > 0, b.meta.OOM)
		}
		if !b.meta.OOM && math.Abs(float64(got.PeakReserved-b.meta.PeakReserved)) > 0.05*float64(b.meta.PeakReserved) {
			t.Errorf("%s under %q: peak reserved %d, recorded %d", a.name, b.meta.AllocConf, got.PeakReserved, b.meta.PeakReserved)
		}
		if c.check != nil {
			c.check(t, got, a)
		}
	}
	if n == 0 {
		t.Skip("rec's what-if recordings absent")
	}
}
