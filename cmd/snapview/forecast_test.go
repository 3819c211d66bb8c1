package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForecastUsageErrors: a single file, a value given twice, files from
// different code (GPT-2 and ResNet-50: nothing aligns), a file that ran
// out of memory, and flag mistakes are usage errors (exit 2) naming the
// files and the fault.
func TestForecastUsageErrors(t *testing.T) {
	b1 := sharedSnapshot(t, "scaling/gpt2_bs/batch_1/snapshot.pickle.xz")
	b2 := sharedSnapshot(t, "scaling/gpt2_bs/batch_2/snapshot.pickle.xz")
	r8 := sharedSnapshot(t, "scaling/resnet50_bs/batch_8/snapshot.pickle.xz")
	oom := sharedSnapshot(t, "scaling/gpt2_bs/batch_19_cap10883M/snapshot.pickle.xz")
	testUsageErrors(t, []usageCase{
		{"one file", []string{"forecast", "--to", "4", b1 + "=1"}, "two snapshots or more"},
		{"no value", []string{"forecast", "--to", "4", b1, b2 + "=2"}, "want FILE=VALUE"},
		{"bad value", []string{"forecast", "--to", "4", b1 + "=x", b2 + "=2"}, "not a positive integer"},
		{"same value", []string{"forecast", "--to", "4", b1 + "=1", b2 + "=1"}, "give each value once"},
		{"different code", []string{"forecast", "--to", "4", b1 + "=1", r8 + "=8"}, "do not align"},
		{"oom file", []string{"forecast", "--to", "4", b1 + "=1", oom + "=19"}, "oom entry"},
		{"no target", []string{"forecast", b1 + "=1", b2 + "=2"}, "--to"},
		{"max without limit", []string{"forecast", "--max", b1 + "=1", b2 + "=2"}, "--limit"},
		{"bad conf", []string{"forecast", "--to", "4", "--conf", "nope:1", b1 + "=1", b2 + "=2"}, "--conf"},
		{"bad to", []string{"forecast", "--to", "0", b1 + "=1", b2 + "=2"}, "--to"},
	})
	_, _, err := runSnapview(t, "forecast", "--to", "4", b1+"=1", r8+"=8")
	for _, want := range []string{b1, r8, "first unmatched"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("different code: %q does not name %q", err, want)
		}
	}
}

// TestForecastJSON: --json carries the fields --help lists, and the
// figures the text prints.
func TestForecastJSON(t *testing.T) {
	b1 := sharedSnapshot(t, "scaling/gpt2_bs/batch_1/snapshot.pickle.xz")
	b2 := sharedSnapshot(t, "scaling/gpt2_bs/batch_2/snapshot.pickle.xz")
	b4 := sharedSnapshot(t, "scaling/gpt2_bs/batch_4/snapshot.pickle.xz")
	out, _, err := runSnapview(t, "forecast", "--json", "--param", "batch", "--to", "8,24", "--max", "--limit", "10883MiB", b1+"=1", b2+"=2", b4+"=4")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Param   string                  `json:"param"`
		Files   []struct{ File string } `json:"files"`
		Matched *struct{ Requests, Bytes float64 }
		Targets []struct {
			Value         int64 `json:"value"`
			PeakAllocated int64 `json:"peak_allocated_bytes"`
			PeakReserved  int64 `json:"peak_reserved_bytes"`
			OOM           bool  `json:"oom"`
			OOMEntry      *int  `json:"oom_entry"`
		} `json:"targets"`
		Max *struct {
			Value        int64 `json:"value"`
			PeakReserved int64 `json:"peak_reserved_bytes"`
			Simulations  int   `json:"simulations"`
		} `json:"max"`
		LeaveOneOut []struct{} `json:"leave_one_out"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Param != "batch" || len(v.Files) != 3 || v.Matched == nil || v.Matched.Requests < 0.9 || len(v.Targets) != 2 || v.Max == nil || len(v.LeaveOneOut) != 3 {
		t.Fatalf("JSON: %s", out)
	}
	// Batch 8 fits under the cap (torch: peak reserved 5,995,757,568 B);
	// batch 24 does not (the cap probes: 19 and up fail).
	if tg := v.Targets[0]; tg.OOM || tg.PeakReserved != 5995757568 {
		t.Errorf("batch 8: %+v, want no OOM and torch's 5995757568 B reserved", tg)
	}
	if tg := v.Targets[1]; !tg.OOM || tg.OOMEntry == nil {
		t.Errorf("batch 24 under the cap: %+v, want an OOM with its entry", tg)
	}
	if v.Max.Value != 18 || v.Max.Simulations > 10 {
		t.Errorf("max: %+v, want 18 (the cap probes') in at most 10 simulations", v.Max)
	}
	text, _, err := runSnapview(t, "forecast", "--param", "batch", "--to", "8,24", "--max", "--limit", "10883MiB", b1+"=1", b2+"=2", b4+"=4")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Matched:", "How sizes scale", "Largest batch that fits under 10.6 GiB: 18", "Leave-one-out", "Estimate:"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

// TestForecastBadFile: a file that does not exist or does not decode is
// exit 1 with its name, and a snapshot without a trace is a usage error
// naming it.
func TestForecastBadFile(t *testing.T) {
	b1 := sharedSnapshot(t, "scaling/gpt2_bs/batch_1/snapshot.pickle.xz")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pickle")
	if err := os.WriteFile(bad, []byte("\x80\x04not a pickle"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "nope.pickle"), bad} {
		_, _, err := runSnapview(t, "forecast", "--to", "4", b1+"=1", p+"=2")
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), filepath.Base(p)) {
			t.Errorf("%s: error %v (exit %d), want exit 1 naming the file", p, err, exitCode(err))
		}
	}
	noTrace := sharedSnapshot(t, "public/p02-empty-4dev.pickle")
	_, _, err := runSnapview(t, "forecast", "--to", "4", b1+"=1", noTrace+"=2")
	if err == nil || exitCode(err) != 2 || strings.Count(err.Error(), "p02-empty-4dev.pickle") != 1 {
		t.Errorf("no trace: error %v (exit %d), want exit 2 naming the file once", err, exitCode(err))
	}
}
