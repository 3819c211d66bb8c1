package verdictview

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// TestWhatifText: the table of a what-if analysis keeps within 120
// columns, marks the file's row and the best one, and the JSON has the
// issue's keys.
func TestWhatifText(t *testing.T) {
	s := sharedSnapshot(t, "whatif/varlen_train/default_cap4656M/snapshot.pickle.xz")
	res, err := whatif.Analyze(s, 0, nil, whatif.Options{Limit: 4882169856})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteWhatif(&b, &WhatifView{Devices: []*whatif.Result{res}}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for l := range strings.SplitSeq(out, "\n") {
		if len([]rune(l)) > 120 {
			t.Errorf("line over 120 columns: %q", l)
		}
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{"| file | \"\"", "| * |", "Self-check: exact.", "* Best: PYTORCH_CUDA_ALLOC_CONF="} {
		if !strings.Contains(flat, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteWhatifJSON(&b, &WhatifView{Devices: []*whatif.Result{res}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"devices"`, `"device"`, `"limit_bytes"`, `"limit_inferred"`, `"self_check"`, `"exact"`,
		`"diverged_at_entry"`, `"reason"`, `"candidates"`, `"conf"`, `"source"`, `"peak_reserved_bytes"`,
		`"peak_allocated_bytes"`, `"oom"`, `"oom_entry"`, `"alloc_retries"`, `"segments_allocated"`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

// TestWhatifGolden: the whatif text and JSON of the bundled leak_gc_oom
// snapshot (an OOM, the cap inferred from it). go test -update rewrites
// testdata/leak_gc_oom.whatif.*.
func TestWhatifGolden(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "leak_gc_oom.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := whatif.Analyze(s, 0, nil, whatif.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v := &WhatifView{Devices: []*whatif.Result{res}}
	var text, js bytes.Buffer
	if err := WriteWhatif(&text, v); err != nil {
		t.Fatal(err)
	}
	if err := WriteWhatifJSON(&js, v); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "leak_gc_oom.whatif.txt"), text.String())
	checkGolden(t, filepath.Join("testdata", "leak_gc_oom.whatif.json"), js.String())
}

// TestWhatifOOMVerdictTrust: the HTML marker's verdict carries the
// file's trust (replay.DecideTrust) as the text view does: on a trace
// that misses the start it holds only over what the trace covers.
func TestWhatifOOMVerdictTrust(t *testing.T) {
	r := &whatif.Result{SelfCheck: whatif.SelfCheck{Exact: true, DivergedAt: -1}, Rows: []whatif.Row{{}}, Trust: stats.Known{History: stats.Exact},
		Limit: 1 << 30, LimitSource: whatif.LimitInferredOOM}
	if v := WhatifOOMVerdict(r); strings.Contains(v, "trace covers") {
		t.Errorf("exact history: %q", v)
	}
	r.Trust = stats.Known{History: stats.LowerBound, Why: "the trace misses the start of the run"}
	if v := WhatifOOMVerdict(r); !strings.Contains(v, "Over the part of the run the trace covers: the file's peaks and totals are lower bounds: the trace misses the start") {
		t.Errorf("lower bound: %q", v)
	}
}

// sharedSnapshot loads the corpus snapshot rel (corpus.Path: skipped
// without the corpus, failed when it is required).
func sharedSnapshot(t testing.TB, rel string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(corpus.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
