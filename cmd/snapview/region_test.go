package main

import (
	"os"
	"strings"
	"testing"
)

// TestLeaksByRegionFlag: leaks --by region groups the torch.compile
// recording by compiled region; a bad --by value and --by region with
// --by-annotation are usage errors.
func TestLeaksByRegionFlag(t *testing.T) {
	const file = "../../testdata/snapshots/compiled_regions/snapshot.pickle.xz"
	out, errOut, err := runSnapview(t, "leaks", "--by", "region", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"3 groups by compiled region (--by region)", "region: Torch-Compiled Region: 0/0",
		"region: Torch-Compiled Region: 1/0", "region: (outside compiled regions)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"leaks", "--by", "frame", file}, {"leaks", "--by", "region", "--by-annotation", file}} {
		if _, errOut, err := runSnapview(t, args...); err == nil || !strings.Contains(err.Error()+errOut, "--by") {
			t.Errorf("%v: err %v, stderr %q; want a usage error naming --by", args, err, errOut)
		}
	}
}

// TestRegionsInStateAndReport: on the torch.compile recording, state's
// largest live allocations name the compiled region of each alloc entry
// (text column and JSON "region"), and the report's leak rows name the
// regions of their live bytes, as leaks does.
func TestRegionsInStateAndReport(t *testing.T) {
	const file = "../../testdata/snapshots/compiled_regions/snapshot.pickle.xz"
	out, errOut, err := runSnapview(t, "state", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if !strings.Contains(out, "Compiled region") || !strings.Contains(out, "| 0/1 ") {
		t.Errorf("state names no compiled region:\n%s", out)
	}
	out, _, err = runSnapview(t, "state", "--json", file)
	if err != nil || !strings.Contains(out, `"region": "Torch-Compiled Region: 1/1"`) {
		t.Errorf("state --json names no region (%v)", err)
	}
	html := t.TempDir() + "/r.html"
	if _, errOut, err := runSnapview(t, "report", "-o", html, file); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "in Torch-Compiled Region: 0/0 (32.0 MiB)") {
		t.Errorf("the report's leak rows name no compiled region")
	}
}

// TestDiffSidesRecordFunction: diff says which step and which
// record_function ranges each side is at, text and --json (the
// annotations recording's peak falls in its first step's optimizer).
func TestDiffSidesRecordFunction(t *testing.T) {
	file := sharedSnapshot(t, "torch2.11/annotations/snapshot.pickle")
	out, errOut, err := runSnapview(t, "diff", file, file, "--at", "end")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	flat := strings.Join(strings.Fields(out), " ")
	if !strings.Contains(flat, "step 1 of 3, 5.517 s after the first entry, inside record_function ## step 0 ## > optimizer > Optimizer.step#Adam.step") {
		t.Errorf("the base side names no record_function range:\n%s", out)
	}
	out, _, err = runSnapview(t, "diff", "--json", file, file)
	if err != nil || !strings.Contains(out, `"record_function": [`) || !strings.Contains(out, `"step": 1`) {
		t.Errorf("diff --json sides name no step or range (%v):\n%.600s", err, out)
	}
}
