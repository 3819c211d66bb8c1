package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/report/html"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// TestWhatifUsageErrors: bad --conf and --limit values are usage errors
// naming what is wrong (and, for --conf, the valid keys).
func TestWhatifUsageErrors(t *testing.T) {
	file := bundled("mlp_train.pickle")
	testUsageErrors(t, []usageCase{
		{"unknown key", []string{"whatif", "--conf", "max_split_size:128", file}, `unrecognized key "max_split_size" (valid keys: backend, max_split_size_mb,`},
		{"bad value", []string{"whatif", "--conf", "expandable_segments:yes", file}, `expandable_segments is "yes"; expected True or False`},
		{"small split", []string{"whatif", "--conf", "max_split_size_mb:10", file}, "max_split_size_mb is 10; it must be >= 20"},
		{"divisions", []string{"whatif", "--conf", "roundup_power2_divisions:[256:3]", file}, "must be a power of 2"},
		{"limit unit", []string{"whatif", "--limit", "4.5G", file}, `--limit "4.5G": G is ambiguous`},
		{"limit zero", []string{"whatif", "--limit", "0", file}, "want a positive byte count"},
		{"no file", []string{"whatif"}, "whatif requires FILE"},
	})
	testMissingFile(t, "whatif")
}

type whatifJSONOut struct {
	Devices []struct {
		Device        int    `json:"device"`
		LimitBytes    *int64 `json:"limit_bytes"`
		LimitInferred *struct {
			Min int64 `json:"min_bytes"`
			Max int64 `json:"max_bytes"`
		} `json:"limit_inferred"`
		SelfCheck struct {
			Exact      bool   `json:"exact"`
			DivergedAt *int   `json:"diverged_at_entry"`
			Reason     string `json:"reason"`
		} `json:"self_check"`
		Candidates []struct {
			Conf          string `json:"conf"`
			Source        string `json:"source"`
			PeakReserved  int64  `json:"peak_reserved_bytes"`
			PeakAllocated int64  `json:"peak_allocated_bytes"`
			OOM           bool   `json:"oom"`
			OOMEntry      *int   `json:"oom_entry"`
			Retries       int64  `json:"alloc_retries"`
			Segments      int64  `json:"segments_allocated"`
		} `json:"candidates"`
	} `json:"devices"`
}

// TestWhatifVarlen: the example. Under the 4656 MiB cap, the
// default and roundup_power2_divisions:4 runs hit an OOM while
// expandable_segments, max_split_size_mb:128 and
// garbage_collection_threshold:0.6 fit; the default file's own row
// reproduces its OOM (self-check exact) and --conf rows keep their text.
func TestWhatifVarlen(t *testing.T) {
	file := sharedSnapshot(t, "whatif/varlen_train/default_cap4656M/snapshot.pickle.xz")
	confs := []string{"expandable_segments:True", "max_split_size_mb:128", "roundup_power2_divisions:4", "garbage_collection_threshold:0.6", " expandable_segments : True "}
	args := []string{"whatif", "--json", "--limit", "4882169856"}
	for _, c := range confs {
		args = append(args, "--conf", c)
	}
	out, _, err := runSnapview(t, append(args, file)...)
	if err != nil {
		t.Fatal(err)
	}
	var v whatifJSONOut
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(v.Devices) != 1 {
		t.Fatalf("%d devices", len(v.Devices))
	}
	d := v.Devices[0]
	if !d.SelfCheck.Exact || d.SelfCheck.DivergedAt != nil || d.LimitBytes == nil || *d.LimitBytes != 4882169856 || d.LimitInferred != nil {
		t.Errorf("self-check %+v, limit %v, inferred %v", d.SelfCheck, d.LimitBytes, d.LimitInferred)
	}
	wantOOM := []bool{true, false, false, true, false, false}
	if len(d.Candidates) != len(wantOOM) {
		t.Fatalf("%d rows, want %d", len(d.Candidates), len(wantOOM))
	}
	for i, c := range d.Candidates {
		if c.OOM != wantOOM[i] || (c.OOMEntry != nil) != c.OOM {
			t.Errorf("row %d %q: oom %t (entry %v), want %t", i, c.Conf, c.OOM, c.OOMEntry, wantOOM[i])
		}
		if i > 0 && (c.Source != "conf" || c.Conf != confs[i-1]) {
			t.Errorf("row %d: conf %q source %q, want %q from --conf", i, c.Conf, c.Source, confs[i-1])
		}
	}
	if f := d.Candidates[0]; f.Source != "file" || f.PeakReserved != 4582277120 || f.Retries != 1 || *f.OOMEntry != 5028 {
		t.Errorf("file row %+v, want peak reserved 4582277120, 1 retry, OOM at 5028 (memory_stats() of the run)", f)
	}
}

// TestWhatifTable: the candidate table of a capped OOM run infers the cap,
// marks a best row that is not the file's, and never lists the file's own
// setting as a candidate.
func TestWhatifTable(t *testing.T) {
	file := sharedSnapshot(t, "whatif/varlen_train/expandable_cap4656M/snapshot.pickle.xz")
	out, _, err := runSnapview(t, "whatif", "--limit", "4656MiB", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Self-check: exact.", "cap 4,656 MiB (4,882,169,856 B, --limit)", "| file | expandable_segments:True"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	js, _, err := runSnapview(t, "whatif", "--json", "--limit", "4656MiB", file)
	if err != nil {
		t.Fatal(err)
	}
	var v whatifJSONOut
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Devices[0].Candidates[1:] {
		if c.Conf == "" {
			continue // torch's defaults: the file's setting removed
		}
		if c.Source != "candidate" || c.Conf == "expandable_segments:True" || !strings.HasPrefix(c.Conf, "expandable_segments:True,") {
			t.Errorf("candidate %q (%s): want the defaults, or the file's setting plus one change", c.Conf, c.Source)
		}
	}
	for l := range strings.SplitSeq(out, "\n") {
		if len([]rune(l)) > 120 {
			t.Errorf("line over 120 columns: %q", l)
		}
	}
	oom := sharedSnapshot(t, "whatif/varlen_train/default_cap4656M/snapshot.pickle.xz")
	out, _, err = runSnapview(t, "whatif", oom)
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"cap inferred from the OOM: at least", "| * |", "* Best: PYTORCH_CUDA_ALLOC_CONF="} {
		if !strings.Contains(flat, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// TestStateOOMWhatif: state --at oom adds the what-if verdict, as text and
// in the JSON's oom object.
func TestStateOOMWhatif(t *testing.T) {
	file := sharedSnapshot(t, "whatif/varlen_train/default_cap4656M/snapshot.pickle.xz")
	out, _, err := runSnapview(t, "state", "--at", "oom", "--top", "1", file)
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"What-if (snapview whatif)", "Fit at any cap from 4,370 MiB to 4,815.9 MiB", `"expandable_segments:True" (peak reserved`} {
		if !strings.Contains(flat, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	js, _, err := runSnapview(t, "state", "--at", "oom", "--json", file)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		OOM struct {
			Whatif *struct {
				SelfCheck struct {
					Exact bool `json:"exact"`
				} `json:"self_check"`
				Candidates []struct {
					Conf string `json:"conf"`
					OOM  bool   `json:"oom"`
				} `json:"candidates"`
			} `json:"whatif"`
		} `json:"oom"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	w := v.OOM.Whatif
	if w == nil || !w.SelfCheck.Exact || len(w.Candidates) < 2 || !w.Candidates[0].OOM {
		t.Fatalf("oom.whatif = %+v, want an exact self-check and the file's row failing", w)
	}
	for _, c := range w.Candidates {
		if c.Conf == "expandable_segments:True" && c.OOM {
			t.Errorf("expandable_segments:True predicted to fail; the recording under it fit")
		}
	}
}

// TestWhatifProgress: with SNAPVIEW_PROGRESS=always the simulations draw
// a progress line on stderr and clear it; stdout is unchanged.
func TestWhatifProgress(t *testing.T) {
	file := bundled("mlp_train.pickle")
	plain, _, err := runSnapview(t, "whatif", file)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SNAPVIEW_PROGRESS", "always")
	out, errOut, err := runSnapview(t, "whatif", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "\rsimulating device 0: 9/9 settings") || !strings.HasSuffix(errOut, "\r\033[K") {
		t.Errorf("stderr %q, want the progress line, cleared", errOut)
	}
	if out != plain {
		t.Error("stdout differs with the progress line on")
	}
}

// whatifRun runs whatif with args, returning the text and the --json
// output decoded into a map.
func whatifRun(t *testing.T, args ...string) (string, map[string]any) {
	t.Helper()
	text, _, err := runSnapview(t, append([]string{"whatif"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	js, _, err := runSnapview(t, append([]string{"whatif", "--json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Devices []map[string]any `json:"devices"`
	}
	if err := json.Unmarshal([]byte(js), &v); err != nil || len(v.Devices) != 1 {
		t.Fatalf("%v, %d devices\n%s", err, len(v.Devices), js)
	}
	return text, v.Devices[0]
}

// TestWhatifCapReleasesNotEmptyCache: without --limit, the 31 runs of
// segment frees right before a new segment in a capped run are the
// allocator making room, not empty_cache() calls (TESTER finding 3: the
// count said "31 empty_cache() calls"): they bound the cap
// ("inferred-releases"), the run's 4656 MiB cap inside the bounds.
func TestWhatifCapReleasesNotEmptyCache(t *testing.T) {
	file := sharedSnapshot(t, "whatif/varlen_train/max_split_128_cap4656M/snapshot.pickle.xz")
	text, d := whatifRun(t, file)
	if strings.Contains(text, "31 empty_cache() calls") || !strings.Contains(text, "0 empty_cache() calls read from the trace.") {
		t.Errorf("count line:\n%s", strings.SplitN(text, "\n", 4)[:3])
	}
	if d["empty_cache_calls"] != 0.0 || d["limit_source"] != "inferred-releases" {
		t.Errorf("empty_cache_calls %v, limit_source %v", d["empty_cache_calls"], d["limit_source"])
	}
	b, _ := d["limit_inferred"].(map[string]any)
	if lo, hi := b["min_bytes"], b["max_bytes"]; lo == nil || hi == nil || lo.(float64) > 4882169856 || hi.(float64) < 4882169856 {
		t.Errorf("limit_inferred %v: want bounds around the run's 4882169856-byte cap", b)
	}
	_, d = whatifRun(t, "--limit", "4656MiB", file)
	if d["empty_cache_calls"] != 0.0 || d["releases_before_new_segment"] != 0.0 || d["limit_source"] != "flag" {
		t.Errorf("--limit: empty_cache_calls %v, releases_before_new_segment %v, limit_source %v",
			d["empty_cache_calls"], d["releases_before_new_segment"], d["limit_source"])
	}
}

// TestWhatifLimitBelowFile: a cap below the 52 MiB segment the file made
// at entry 0 contradicts the file; the self-check says so rather than
// blaming the cache (TESTER finding 4).
func TestWhatifLimitBelowFile(t *testing.T) {
	file := sharedSnapshot(t, "whatif/frag_cap/default/snapshot.pickle.xz")
	text, d := whatifRun(t, "--limit", "1MiB", file)
	if !strings.Contains(text, "DIVERGES at entry 0: the file reserves 54525952 bytes at entry 0, more than the cap of 1048576 bytes") ||
		strings.Contains(text, "serves the request") {
		t.Errorf("self-check:\n%s", text)
	}
	sc := d["self_check"].(map[string]any)
	if d["cap_below_file"] != true || sc["exact"] != false || sc["diverged_at_entry"] != 0.0 {
		t.Errorf("cap_below_file %v, self_check %v", d["cap_below_file"], sc)
	}
	if _, d := whatifRun(t, "--limit", "4GiB", file); d["cap_below_file"] != false {
		t.Errorf("4 GiB: cap_below_file %v", d["cap_below_file"])
	}
}

// TestWhatifTrustMarks: on a trace that misses the start, the file row's
// peaks carry summary's '+' (replay.DecideTrust), and neither "exact"
// nor "no setting does better" is claimed for the run (TESTER finding 5).
func TestWhatifTrustMarks(t *testing.T) {
	file := sharedSnapshot(t, "big/gpt2_2M_events/snapshot.pickle.xz")
	text, d := whatifRun(t, file)
	for _, want := range []string{"| file | \"\"                         | 4.9 GiB+ |  4.5 GiB+ |",
		"Self-check: matches the trace.", "peaks and totals are lower bounds: the trace misses the start",
		"No setting tried does better than the file's own over the part of the run the trace covers"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"Self-check: exact", "better than the file's own.", " 4.9 GiB |"} {
		if strings.Contains(text, bad) {
			t.Errorf("text has %q:\n%s", bad, text)
		}
	}
	sc := d["self_check"].(map[string]any)
	h := d["history"].(map[string]any)
	c0 := d["candidates"].([]any)[0].(map[string]any)
	if sc["exact"] != false || sc["matches_trace"] != true || h["exactness"] != "lower_bound" || c0["peaks_exactness"] != "lower_bound" {
		t.Errorf("self_check %v, history %v, file row %v", sc, h, c0)
	}
	// A trace from the start stays exact.
	_, d = whatifRun(t, sharedSnapshot(t, "whatif/varlen_train/default_cap4656M/snapshot.pickle.xz"), "--limit", "4656MiB")
	if sc, h := d["self_check"].(map[string]any), d["history"].(map[string]any); sc["exact"] != true || h["exactness"] != "exact" {
		t.Errorf("from the start: self_check %v, history %v", sc, h)
	}
}

// TestOOMVerdictViewsAgree: on every device trace of the corpus that has
// an OOM, whatif, state --at oom and the report's OOM marker give the same
// what-if verdict (verdictview.WhatifCapVerdict of the same analysis).
func TestOOMVerdictViewsAgree(t *testing.T) {
	var files []string
	for _, g := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/snapshot.pickle", 17}, {"public/*.pickle", 34}, {"whatif/*/*/snapshot.pickle.xz", 15}} {
		files = append(files, corpus.Glob(t, g.glob, g.min)...)
	}
	// The what-if recordings of this repository, and more from
	// $SNAPVIEW_WHATIF_REC.
	for _, d := range []string{filepath.Join("..", "..", "testdata", "snapshots", "whatif"), os.Getenv("SNAPVIEW_WHATIF_REC")} {
		if d != "" {
			m, _ := filepath.Glob(filepath.Join(d, "*", "*", "snapshot.pickle.xz"))
			files = append(files, m...)
		}
	}
	flat := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	n := 0
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			continue
		}
		// One analysis per file, as the report makes it: the verdict and
		// the page read the same replays, and the page is built once.
		opt := html.Options{}
		an := analysis.New(s, opt.Analysis())
		var h *html.Report
		for d := range s.Traces {
			oom := slices.IndexFunc(s.Traces[d], func(e snapshot.TraceEntry) bool { return e.Action == snapshot.ActionOOM })
			if oom < 0 {
				continue
			}
			res, err := an.WhatIf(d, whatif.Options{})
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want := flat(verdictview.WhatifCapVerdict(res))
			dev := strconv.Itoa(d)
			wi, _, err := runSnapview(t, "whatif", "--device", dev, f)
			if err != nil {
				t.Fatalf("%s: whatif: %v", f, err)
			}
			st, _, err := runSnapview(t, "state", "--at", "oom", "--device", dev, "--top", "1", f)
			if err != nil {
				t.Fatalf("%s: state: %v", f, err)
			}
			if h == nil {
				if h, err = html.Build(an, opt); err != nil {
					t.Fatalf("%s: report: %v", f, err)
				}
			}
			marker := ""
			for _, hd := range h.Devices {
				if hd.Device == d && len(hd.OOMs) > 0 {
					marker = hd.OOMs[0].Label
				}
			}
			n++
			for view, out := range map[string]string{"whatif": wi, "state --at oom": st, "report's OOM marker": marker} {
				if !strings.Contains(flat(out), want) {
					t.Errorf("%s device %d: %s lacks the verdict %q:\n%s", f, d, view, want, out)
				}
			}
		}
	}
	if n == 0 {
		t.Skip("no OOM in the corpus")
	}
	t.Logf("%d device traces with an OOM", n)
}

// TestWhatifOOMMessage: --oom-message @FILE fixes the cap of the
// fragmentation OOM (frag_oom/default_cap2048M: "2.00 GiB allowed") and
// the verdict says which settings fit at it (expandable_segments and
// max_split_size_mb 64 and 128, as recorded); a text that is not an OOM
// message, or one given with --limit, is a usage error.
func TestWhatifOOMMessage(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "snapshots", "whatif", "frag_oom", "default_cap2048M")
	file := filepath.Join(dir, "snapshot.pickle.xz")
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Skipf("frag_oom recording absent: %v", err)
	}
	var meta struct {
		OOMMessage string `json:"oom_message"`
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.OOMMessage == "" {
		t.Fatalf("meta: %v", err)
	}
	msg := filepath.Join(t.TempDir(), "oom.txt")
	if err := os.WriteFile(msg, []byte(meta.OOMMessage), 0o644); err != nil {
		t.Fatal(err)
	}
	text, d := whatifRun(t, "--oom-message", "@"+msg, file)
	if d["limit_source"] != "oom-message" {
		t.Errorf("limit_source %v", d["limit_source"])
	}
	fits := map[string]bool{}
	for _, c := range d["candidates"].([]any) {
		m := c.(map[string]any)
		fits[m["conf"].(string)] = m["fits_at_min_cap"].(bool) && m["fits_at_max_cap"].(bool)
	}
	want := map[string]bool{"": false, "expandable_segments:True": true, "max_split_size_mb:64": true,
		"max_split_size_mb:128": true, "garbage_collection_threshold:0.6": false}
	for conf, w := range want {
		if f, ok := fits[conf]; !ok || f != w {
			t.Errorf("%q fits at the message's cap: %v (present %t), recorded %t", conf, f, ok, w)
		}
	}
	if !strings.Contains(strings.Join(strings.Fields(text), " "), `"2.00 GiB allowed"`) {
		t.Errorf("the text does not say the cap came from the message:\n%s", text)
	}
	testUsageErrors(t, []usageCase{
		{"not a message", []string{"whatif", "--oom-message", "segfault", file}, "not a CUDA out-of-memory message"},
		{"with --limit", []string{"whatif", "--oom-message", "@" + msg, "--limit", "2GiB", file}, "--oom-message and --limit both set the cap"},
	})
}

// TestWhatifOtherRunsMessage: the OOM message of another run (vllm_load's,
// capped at 7.5 GiB) given for frag_oom (2 GiB) lies outside what the
// trace allows: the trace's bounds are used and stderr says why.
func TestWhatifOtherRunsMessage(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "snapshots", "whatif")
	b, err := os.ReadFile(filepath.Join(dir, "vllm_load", "default_cap7680M", "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		OOMMessage string `json:"oom_message"`
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.OOMMessage == "" {
		t.Fatalf("meta.json: %v, message %q", err, meta.OOMMessage)
	}
	out, stderr, err := runSnapview(t, "whatif", "--oom-message", meta.OOMMessage, filepath.Join(dir, "frag_oom", "default_cap2048M", "snapshot.pickle.xz"))
	if err != nil {
		t.Fatal(err)
	}
	want := "warning: device 0: --oom-message: the message's cap (8,047,694,971 to 8,058,432,389 bytes) is outside what the trace allows (1,677,721,600 to 2,306,867,199 bytes): the message is not this run's"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), "the cap lies in 1,600 MiB to 2,199.9 MiB") {
		t.Errorf("the trace's own cap interval is not used:\n%s", out)
	}
}
