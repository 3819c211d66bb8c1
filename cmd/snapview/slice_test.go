package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSliceUsageErrors(t *testing.T) {
	testUsageErrors(t, []usageCase{
		{"no file", []string{"slice", "-o", "x"}, "slice requires FILE"},
		{"no output", []string{"slice", "--to", "peak", "x.pickle"}, "needs -o"},
		{"bad moment", []string{"slice", "--from", "later", "-o", "y", "x.pickle"}, `--from "later"`},
		{"around and from", []string{"slice", "--around", "peak", "--from", "entry:1", "-o", "y", "x.pickle"}, "--around takes the place"},
		{"entries alone", []string{"slice", "--entries", "5", "-o", "y", "x.pickle"}, "--entries sizes"},
		{"entries 0", []string{"slice", "--around", "oom", "--entries", "0", "-o", "y", "x.pickle"}, "at least 1"},
		{"bad format", []string{"slice", "--format", "xml", "-o", "y", "x.pickle"}, "--format"},
	})
	testUsageErrors(t, []usageCase{
		{"no output", []string{"convert", "x.pickle"}, "needs -o"},
		{"protocol 5", []string{"convert", "--protocol", "5", "-o", "y", "x.pickle"}, "--protocol 5"},
		{"json protocol", []string{"convert", "--format", "json", "--protocol", "4", "-o", "y", "x.pickle"}, "--protocol is for"},
	})
}

// TestSliceEmptyWindow: a window without entries is a usage error that
// says so.
func TestSliceEmptyWindow(t *testing.T) {
	f := sharedSnapshot(t, "torch2.11/leak_train/snapshot.pickle")
	out := filepath.Join(t.TempDir(), "out.pickle")
	for _, args := range [][]string{
		{"--from", "time:1s", "--to", "time:2s"},
		{"--from", "entry:900", "--to", "entry:100"},
		{"--to", "entry:-1"},
	} {
		_, _, err := runSnapview(t, append(append([]string{"slice"}, args...), "-o", out, f)...)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("%q: error %v (exit %d), want a usage error", args, err, exitCode(err))
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

func TestSliceMissingFile(t *testing.T) {
	testMissingFile(t, "slice", "-o", filepath.Join(t.TempDir(), "out.pickle"))
	testMissingFile(t, "convert", "-o", filepath.Join(t.TempDir(), "out.pickle"))
}

// currentStats returns the memory_stats figures "*.current" of the JSON
// of summary (devices[0].memory_stats, each {value, exactness}) or of
// state (memory_stats, each a number).
func currentStats(t *testing.T, js string) map[string]float64 {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatalf("%v: %.200s", err, js)
	}
	ms, _ := doc["memory_stats"].(map[string]any)
	if devs, ok := doc["devices"].([]any); ok && len(devs) > 0 {
		ms, _ = devs[0].(map[string]any)["memory_stats"].(map[string]any)
	}
	out := map[string]float64{}
	for k, v := range ms {
		if !strings.HasSuffix(k, ".current") {
			continue
		}
		switch x := v.(type) {
		case float64:
			out[k] = x
		case map[string]any:
			out[k], _ = x["value"].(float64)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no current figures in %.300s", js)
	}
	return out
}

// stateParts are the parts of `state --json` that a slice must give as
// the original gives them at the window's end: segments, free space,
// largest allocations and stacks, with each alloc_index counted from
// entry from of the trace (-1 before it) and each stack id replaced by
// its frames.
func stateParts(t *testing.T, js string, from int) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	stacks, _ := doc["stacks"].([]any)
	var fix func(v any)
	fix = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				fix(e)
			}
		case map[string]any:
			if i, ok := x["alloc_index"].(float64); ok {
				x["alloc_index"] = max(i-float64(from), -1)
			}
			if i, ok := x["stack"].(float64); ok && int(i) < len(stacks) {
				x["stack"] = stacks[int(i)].(map[string]any)["frames"]
			}
			for _, e := range x {
				fix(e)
			}
		}
	}
	parts := map[string]any{"segments": doc["segments"], "free": doc["free"], "largest": doc["largest"], "stacks": doc["stacks"]}
	fix(parts["segments"])
	fix(parts["largest"])
	// Stacks of equal bytes and allocations are listed in the order of
	// their ids, which differ from file to file: sort those ties.
	if st, ok := parts["stacks"].([]any); ok {
		key := func(v any) (float64, float64, string) {
			m := v.(map[string]any)
			b, _ := json.Marshal(m)
			x, _ := m["bytes"].(float64)
			n, _ := m["allocations"].(float64)
			return x, n, string(b)
		}
		sort.SliceStable(st, func(i, j int) bool {
			xi, ni, si := key(st[i])
			xj, nj, sj := key(st[j])
			if xi != xj {
				return xi > xj
			}
			if ni != nj {
				return ni > nj
			}
			return si < sj
		})
	}
	return parts
}

// TestSliceAgreesWithState cuts windows of corpus files with the
// command and wants, for each: summary of the slice = state --at
// entry:TO of the original (the current figures), and state --at end of
// the slice = state --at entry:TO (segments, blocks, free space, largest
// allocations); the slice of the slice the same again; python3's
// pickle.load reads each slice.
func TestSliceAgreesWithState(t *testing.T) {
	dir := t.TempDir()
	py, _ := exec.LookPath("python3")
	for _, c := range []struct {
		file               string
		entryFrom, entryTo int
	}{
		{"torch2.11/mlp_train/snapshot.pickle", 100, 400},
		{"torch2.11/oom/snapshot.pickle", 200, 500},
		{"torch2.11/ring_overflow/snapshot.pickle", 10, 150},
		{"torch2.11/expandable/snapshot.pickle", 50, 300},
		{"torch2.11/cuda_graph/snapshot.pickle", 5, 60},
		{"torch2.11/annotations/snapshot.pickle", 30, 200},
	} {
		from, to := fmt.Sprintf("entry:%d", c.entryFrom), fmt.Sprintf("entry:%d", c.entryTo)
		f := sharedSnapshot(t, c.file)
		name := strings.ReplaceAll(filepath.Dir(c.file), "/", "_")
		out := filepath.Join(dir, name+".pickle")
		if _, stderr, err := runSnapview(t, "slice", "--from", from, "--to", to, "-o", out, f); err != nil {
			t.Fatalf("%s: slice: %v\n%s", c.file, err, stderr)
		}
		at := to
		want, _, err := runSnapview(t, "state", "--json", "--at", at, f)
		if err != nil {
			t.Fatal(err)
		}
		sum, _, err := runSnapview(t, "summary", "--json", out)
		if err != nil {
			t.Fatal(err)
		}
		if w, g := currentStats(t, want), currentStats(t, sum); !reflect.DeepEqual(w, g) {
			t.Errorf("%s %s..%s: summary of the slice %v, state --at %s of the original %v", c.file, from, to, g, at, w)
		}
		end, _, err := runSnapview(t, "state", "--json", "--at", "end", out)
		if err != nil {
			t.Fatal(err)
		}
		if w, g := stateParts(t, want, c.entryFrom), stateParts(t, end, 0); !reflect.DeepEqual(w, g) {
			t.Errorf("%s %s..%s: state --at end of the slice differs from state --at %s of the original (-want +got):\n%s", c.file, from, to, at, cmp.Diff(w, g))
		}
		// A slice of the slice: its last 10 entries.
		out2 := filepath.Join(dir, name+".2.pickle")
		if _, stderr, err := runSnapview(t, "slice", "--around", "end", "--entries", "10", "-o", out2, out); err != nil {
			t.Fatalf("%s: slice of the slice: %v\n%s", c.file, err, stderr)
		}
		end2, _, err := runSnapview(t, "state", "--json", "--at", "end", out2)
		if err != nil {
			t.Fatal(err)
		}
		n := c.entryTo - c.entryFrom + 1
		if w, g := stateParts(t, want, c.entryTo-min(n, 10)+1), stateParts(t, end2, 0); !reflect.DeepEqual(w, g) {
			t.Errorf("%s: the slice of the slice ends elsewhere than the slice", c.file)
		}
		if py != "" {
			for _, p := range []string{out, out2} {
				if res, err := exec.Command(py, "-c", "import pickle,sys; pickle.load(open(sys.argv[1],'rb'))", p).CombinedOutput(); err != nil {
					t.Errorf("python3 pickle.load %s: %v\n%s", p, err, res)
				}
			}
		}
	}
}

// TestSliceRefused: a file whose replay does not end in its segments is
// refused with the reason, exit code 1, and no file is written.
func TestSliceRefused(t *testing.T) {
	f := sharedSnapshot(t, "field/slice-active-blocks-only.json")
	out := filepath.Join(t.TempDir(), "out.pickle")
	_, _, err := runSnapview(t, "slice", "--to", "entry:50", "-o", out, f)
	if err == nil || !strings.Contains(err.Error(), "no slice is cut: the replayed end state differs") || exitCode(err) != 1 {
		t.Fatalf("error = %v (exit %d), want the refusal with its reason, exit 1", err, exitCode(err))
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was written", out)
	}
}

// TestConvertRoundTrip converts corpus files to a protocol 4 pickle and
// to JSON and wants summary --json of each the same as the original's.
func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, rel := range []string{"torch2.11/two_devices/snapshot.pickle", "torch2.11/oom/snapshot.pickle", "public/p14-legacy-list-dev1.pickle", "public/p25-no-timestamps-4dev.pickle"} {
		f := sharedSnapshot(t, rel)
		want, _, err := runSnapview(t, "summary", "--json", f)
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"pickle", "json"} {
			out := filepath.Join(dir, "out."+format)
			if _, stderr, err := runSnapview(t, "convert", "--format", format, "-o", out, f); err != nil {
				t.Fatalf("%s: %v\n%s", rel, err, stderr)
			}
			got, _, err := runSnapview(t, "summary", "--json", out)
			if err != nil {
				t.Fatal(err)
			}
			if strip(t, got) != strip(t, want) {
				t.Errorf("%s as %s: summary --json differs:\n%s\nwant\n%s", rel, format, got, want)
			}
		}
	}
}

// strip drops what names the file (its path, format and size) from
// summary --json.
func strip(t *testing.T, js string) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	delete(doc, "file")
	delete(doc, "format")
	b, _ := json.Marshal(doc)
	return string(b)
}
