package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func TestLeaksUsageErrors(t *testing.T) {
	// The file is never opened: usage is checked first.
	testUsageErrors(t, []usageCase{
		{"no file", []string{"leaks"}, "leaks requires FILE"},
		{"bad moment", []string{"leaks", "--at", "later", "x.pickle"}, `--at "later"`},
		{"bad sort", []string{"leaks", "--sort", "size", "x.pickle"}, "--sort"},
		{"bad steps", []string{"leaks", "--steps", "epochs", "x.pickle"}, "--steps"},
		{"bad focus", []string{"leaks", "--focus", "(", "x.pickle"}, "--focus"},
		{"bad ignore", []string{"leaks", "--ignore", "[", "x.pickle"}, "--ignore"},
		{"bad min-bytes", []string{"leaks", "--min-bytes", "lots", "x.pickle"}, "--min-bytes"},
		{"negative top", []string{"leaks", "--top", "-1", "x.pickle"}, "--top"},
		{"top 0", []string{"leaks", "--top", "0", "x.pickle"}, "--top must be at least 1, got 0"},
		{"ambiguous min-bytes", []string{"leaks", "--min-bytes", "2g", "x.pickle"}, "g is ambiguous: say 2GB (powers of 1000) or 2GiB (powers of 1024)"},
		{"bad device", []string{"leaks", "--device", "-2", "x.pickle"}, "--device"},
	})
}

func TestLeaksMissingFile(t *testing.T) {
	testMissingFile(t, "leaks")
}

func TestLeaksHelpExplainsKeyAndScore(t *testing.T) {
	out, _, err := runSnapview(t, "leaks", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"whole stack", "--fold", "score = B x S x (1 - 1/N)", "Optimizer.step#", "--at"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// bundled returns a file of testdata/snapshots.
func bundled(name string) string {
	return filepath.Join("..", "..", "testdata", "snapshots", name)
}

func TestLeaksBundled(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantOut    []string // substrings of stdout, in order
		notOut     []string
		wantStderr []string
	}{
		{
			"oom by default", []string{"leaks", "--top", "3", bundled("leak_gc_oom.pickle")},
			[]string{"at the last OOM", "OOM's unwinding", "ProfilerStep#N", "| 1 |", "freed only in bursts (3 so far)", "model.py:120 attach_debug",
				"| 2 |", "grows every step, never freed: likely leak", "model.py:150 log_stats", "| 3 |", "allocated before the first step, never freed: parameters/state"},
			nil, nil,
		},
		{
			"after the OOM", []string{"leaks", "--at", "end", bundled("leak_gc_oom.pickle")},
			[]string{"at the end of the trace", "An OOM at entry 270 was followed by frees of 242.0 MiB: its unwinding, not a fix", "model.py:150 log_stats"},
			[]string{"attach_debug"}, nil,
		},
		{
			"focus and full", []string{"leaks", "--focus", `cache\.py`, "--full", bundled("leak_bounded.pickle")},
			[]string{"after --focus/--ignore/--min-bytes", "| 1 |", "flat since step 8", "/home/xxxx/proj/cache.py:40 put",
				"/usr/lib/python3.11/runpy.py:88 _run_code"},
			[]string{"| 2 |", "(stdlib)"}, nil,
		},
		{
			"sort by bytes", []string{"leaks", "--sort", "bytes", "--min-bytes", "20MiB", bundled("leak_bounded.pickle")},
			[]string{"| 1 | 322.0 MiB", "| 2 |  41.5 MiB", "| 3 |  26.0 MiB", "| 4 |  20.8 MiB", "| 5 |  20.8 MiB"},
			[]string{"| 6 |"}, nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, err := runSnapview(t, tt.args...)
			if err != nil {
				t.Fatalf("%v\nstderr:\n%s", err, errOut)
			}
			rest := out
			for _, w := range tt.wantOut {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order); stdout:\n%s", w, out)
				}
				rest = rest[i+len(w):]
			}
			for _, w := range tt.notOut {
				if strings.Contains(out, w) {
					t.Errorf("stdout has %q; stdout:\n%s", w, out)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q; stderr:\n%s", w, errOut)
				}
			}
		})
	}
}

// leaksJSON is the part of the --json output the tests read.
type leaksJSONDoc struct {
	Devices []struct {
		Device  int `json:"device"`
		AtEntry int `json:"at_entry"`
	} `json:"devices"`
	Groups []struct {
		Rank    int    `json:"rank"`
		Device  int    `json:"device"`
		Score   int64  `json:"score"`
		Bytes   int64  `json:"bytes"`
		Kind    string `json:"kind"`
		Verdict string `json:"verdict"`
		Stack   []struct {
			Filename string `json:"filename"`
			Line     int64  `json:"line"`
			Name     string `json:"name"`
		} `json:"stack"`
	} `json:"groups"`
}

// leaksJSON runs `snapview leaks --json` with args and decodes its output.
func leaksJSON(t *testing.T, args ...string) leaksJSONDoc {
	t.Helper()
	out, _, err := runSnapview(t, append([]string{"leaks", "--json"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var doc leaksJSONDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestLeaksLeakTrain runs the command on the real leak_train snapshot:
// both planted leaks in the top 5, the parameters below them.
func TestLeaksLeakTrain(t *testing.T) {
	path := sharedSnapshot(t, "torch2.11/leak_train/snapshot.pickle")
	doc := leaksJSON(t, path)
	rank := func(line int64) int {
		for _, g := range doc.Groups {
			for _, f := range g.Stack {
				if strings.HasSuffix(f.Filename, "snapgen.py") && f.Line == line {
					return g.Rank
				}
			}
		}
		return 0
	}
	graph, clone, params := rank(161), rank(180), rank(166)
	if graph < 1 || graph > 5 || clone < 1 || clone > 5 || params <= max(graph, clone) {
		t.Errorf("ranks: retained graph %d, clone %d, parameters %d; want the leaks in 1..5 and the parameters below", graph, clone, params)
	}

	text, _, err := runSnapview(t, "leaks", "--top", "5", path)
	if err != nil {
		t.Fatal(err)
	}
	// meta.json: 30 training steps. The file's Optimizer.step ranges end
	// each iteration; the steps are the iterations, from the allocation
	// that starts each (see steps.FindSteps).
	for _, want := range []string{"30 steps found from the allocation made once per step", "grows every 3 steps, never freed: likely leak", "snapgen.py:180 leak_train"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

// TestLeaksDevices checks a two-GPU file: every device by default, one
// with --device, and --at oom skipping a device without an OOM.
func TestLeaksDevices(t *testing.T) {
	path := sharedSnapshot(t, "torch2.11/two_devices/snapshot.pickle")
	doc := leaksJSON(t, path)
	if len(doc.Devices) != 2 || doc.Devices[0].Device != 0 || doc.Devices[1].Device != 1 {
		t.Errorf("devices %+v, want 0 and 1", doc.Devices)
	}
	out, _, err := runSnapview(t, "leaks", "--device", "1", path)
	if err != nil || !strings.HasPrefix(out, "Device 1:") || strings.Contains(out, "Device 0:") {
		t.Errorf("--device 1: %v\n%s", err, out)
	}
	_, errOut, err := runSnapview(t, "leaks", "--at", "oom", path)
	if err == nil || !strings.Contains(errOut, "skipped") {
		t.Errorf("--at oom without OOMs: error %v, stderr %q; want a skip warning per device and an error", err, errOut)
	}
}

// TestLeaksEmpty checks a snapshot with nothing in it (field report 13).
func TestLeaksEmpty(t *testing.T) {
	path := sharedSnapshot(t, "public/p02-empty-4dev.pickle")
	out, _, err := runSnapview(t, "leaks", path)
	if err != nil || out != "nothing to show: the snapshot holds no segments and no trace entries (recording was off, or nothing was allocated)\n" {
		t.Errorf("text: %v\n%s", err, out)
	}
	out, _, err = runSnapview(t, "leaks", "--json", path)
	if err != nil || strings.TrimSpace(out) != "{\n  \"devices\": [],\n  \"groups\": []\n}" {
		t.Errorf("json: %v\n%s", err, out)
	}
}

// TestLeaksNoStacks checks the hint for snapshots recorded without stacks.
func TestLeaksNoStacks(t *testing.T) {
	path := sharedSnapshot(t, "torch2.11/no_context/snapshot.pickle")
	out, errOut, err := runSnapview(t, "leaks", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "<no stack recorded>") || !strings.Contains(errOut, "hint: no allocation stacks were recorded") ||
		!strings.Contains(errOut, "_record_memory_history(") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out, errOut)
	}
}
