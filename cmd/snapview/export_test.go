package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"
	"github.com/snapview/snapview/internal/corpus"
)

// torch211Dirs returns the torch 2.11 folders of the shared corpus (all
// 17), or ends the test when the corpus is absent.
func torch211Dirs(t *testing.T) []string {
	t.Helper()
	return corpus.Glob(t, "torch2.11/*", 17)
}

func sortedLines(s string) []string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(l)
	return l
}

// TestExportEveryFormat runs every format on every torch 2.11 recording:
// folded equals _memory_viz's lines, pprof parses with its totals, the
// Chrome trace is JSON with traceEvents, parquet writes the six tables.
func TestExportEveryFormat(t *testing.T) {
	for _, dir := range torch211Dirs(t) {
		file := filepath.Join(dir, "snapshot.pickle")
		name := filepath.Base(dir)
		tmp := t.TempDir()
		for _, view := range []string{"memory", "segments"} {
			out, _, err := runSnapview(t, "export", "--format", "folded", "--view", view, "-o", "-", file)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want, err := os.ReadFile(filepath.Join(dir, "memviz_"+view+".collapsed"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(sortedLines(out), sortedLines(string(want))) {
				t.Errorf("%s: export --format folded --view %s differs from memviz_%s.collapsed", name, view, view)
			}
		}
		out, _, err := runSnapview(t, "export", "--format", "folded", "--user-frames", "-o", "-", file)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(out, "site-packages/torch") || strings.Contains(out, "module.py:") {
			t.Errorf("%s: --user-frames left torch frames in:\n%.300s", name, out)
		}

		pp := filepath.Join(tmp, "p.pb.gz")
		if _, _, err := runSnapview(t, "export", "--format", "pprof", "--label", "rank=1", "-o", pp, file); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f, err := os.Open(pp)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(p.SampleType) != 4 || p.DefaultSampleType != "inuse_space" {
			t.Errorf("%s: sample types %v, default %q", name, p.SampleType, p.DefaultSampleType)
		}
		for _, sm := range p.Sample {
			if sm.Label["rank"][0] != "1" || len(sm.Label["stream"]) != 1 || len(sm.Label["pool"]) != 1 || len(sm.Label["device"]) != 1 {
				t.Fatalf("%s: sample labels %v", name, sm.Label)
			}
		}

		out, _, err = runSnapview(t, "export", "--format", "chrome-trace", "-o", "-", file)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var doc struct {
			TraceEvents []map[string]any `json:"traceEvents"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s: chrome trace: %v", name, err)
		}

		pq := filepath.Join(tmp, "pq")
		if _, _, err := runSnapview(t, "export", "--format", "parquet", "-o", pq, file, file); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, tb := range []string{"allocations", "events", "segments", "blocks", "stacks", "snapshots"} {
			st, err := os.Stat(filepath.Join(pq, tb+".parquet"))
			if err != nil || st.Size() == 0 {
				t.Errorf("%s: table %s: %v", name, tb, err)
			}
		}
	}
}

// TestExportDiffBase: --base-at gives a profile whose inuse_space sums to
// the growth between the two moments, and --base FILE with the same file
// gives an all-zero difference.
func TestExportDiffBase(t *testing.T) {
	file := bundled("mlp_train.pickle")
	load := func(args ...string) *profile.Profile {
		t.Helper()
		out, _, err := runSnapview(t, append([]string{"export", "--format", "pprof", "-o", "-"}, append(args, file)...)...)
		if err != nil {
			t.Fatal(err)
		}
		p, err := profile.Parse(bytes.NewReader([]byte(out)))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	total := func(p *profile.Profile) int64 {
		var n int64
		for _, s := range p.Sample {
			n += s.Value[3]
		}
		return n
	}
	peak, early := total(load()), total(load("--at", "entry:5"))
	if got := total(load("--base-at", "entry:5")); got != peak-early {
		t.Errorf("--base-at entry:5: inuse_space %d, want %d - %d", got, peak, early)
	}
	if got := total(load("--base", file)); got != 0 {
		t.Errorf("--base the same file: inuse_space %d, want 0", got)
	}
}

// TestExportPathLabel: --path-label gives each file its own pprof label.
func TestExportPathLabel(t *testing.T) {
	a, b := bundled("mlp_train.pickle"), bundled("leak_cache.pickle")
	out, _, err := runSnapview(t, "export", "--format", "pprof", "--path-label", "name=([a-z]+_[a-z]+)\\.pickle", "-o", "-", a, b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := profile.Parse(bytes.NewReader([]byte(out)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range p.Sample {
		if len(s.Label["name"]) != 1 || len(s.Label["file"]) != 1 {
			t.Fatalf("sample labels %v", s.Label)
		}
		if want := strings.TrimSuffix(filepath.Base(s.Label["file"][0]), ".pickle"); s.Label["name"][0] != want {
			t.Errorf("label name=%q on a sample of %s", s.Label["name"][0], s.Label["file"][0])
		}
		seen[s.Label["name"][0]] = true
	}
	if !seen["mlp_train"] || !seen["leak_cache"] {
		t.Errorf("labels seen: %v", seen)
	}
}

func TestExportUsageErrors(t *testing.T) {
	file := bundled("mlp_train.pickle")
	testUsageErrors(t, []usageCase{
		{"no format", []string{"export", "-o", "x", file}, "--format is required"},
		{"bad format", []string{"export", "--format", "svg", "-o", "x", file}, `--format "svg"`},
		{"no output", []string{"export", "--format", "pprof", file}, "-o PATH is required"},
		{"no file", []string{"export", "--format", "pprof", "-o", "x"}, "at least one FILE"},
		{"parquet to stdout", []string{"export", "--format", "parquet", "-o", "-", file}, "writes a directory"},
		{"view for pprof", []string{"export", "--format", "pprof", "--view", "segments", "-o", "x", file}, "--view is for --format folded"},
		{"base for folded", []string{"export", "--format", "folded", "--base-at", "end", "-o", "x", file}, "--base-at is for --format pprof"},
		{"at for parquet", []string{"export", "--format", "parquet", "--at", "end", "-o", "x", file}, "--at is for --format pprof and folded"},
		{"bad at", []string{"export", "--format", "pprof", "--at", "top", "-o", "x", file}, `--at "top"`},
		{"bad label", []string{"export", "--format", "pprof", "--label", "rank", "-o", "x", file}, "want key=value"},
		{"label column", []string{"export", "--format", "parquet", "--label", "Path=x", "-o", "x", file}, "is a column of the snapshots table"},
		{"label twice", []string{"export", "--format", "pprof", "--label", "a=1", "--label", "a=2", "-o", "x", file}, "label a given twice"},
		{"label for folded", []string{"export", "--format", "folded", "--label", "a=1", "-o", "x", file}, "folded stacks have no place for labels"},
		{"path label for chrome-trace", []string{"export", "--format", "chrome-trace", "--path-label", "r=rank(\\d+)", "-o", "x", file}, "--path-label is for --format pprof and parquet"},
		{"path label regex", []string{"export", "--format", "parquet", "--path-label", "r=(", "-o", "x", file}, "--path-label"},
		{"path label twice", []string{"export", "--format", "pprof", "--label", "r=1", "--path-label", "r=x", "-o", "x", file}, "label r given twice"},
		{"oom absent", []string{"export", "--format", "pprof", "--at", "oom", "-o", "-", file}, "no oom entry"},
	})
}

func TestTraceCommand(t *testing.T) {
	dirs := torch211Dirs(t)
	for _, dir := range dirs {
		want, err := os.ReadFile(filepath.Join(dir, "memviz_trace.txt"))
		if err != nil {
			continue
		}
		out, _, err := runSnapview(t, "trace", "--format", "memviz", filepath.Join(dir, "snapshot.pickle"))
		if bytes.Contains(want, []byte("KeyError: 'device_traces'")) {
			if err == nil || exitCode(err) != 2 {
				t.Errorf("%s: trace --format memviz on a segment list: %v, want a usage error", dir, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%s: trace --format memviz differs from memviz_trace.txt", filepath.Base(dir))
		}
	}
	oom := filepath.Join(filepath.Dir(dirs[0]), "oom", "snapshot.pickle")
	out, _, err := runSnapview(t, "trace", "--from", "oom", "--to", "oom", oom)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1 shown") || !strings.Contains(out, " oom ") || !strings.Contains(out, "free") {
		t.Errorf("trace --from oom --to oom:\n%s", out)
	}
	out, _, err = runSnapview(t, "trace", "--json", "--to", "entry:1", oom)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Entries []struct {
			Entry  int      `json:"entry"`
			Action string   `json:"action"`
			Addr   *uint64  `json:"addr"`
			Frames []string `json:"frames"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Entries) != 2 || doc.Entries[1].Entry != 1 || doc.Entries[0].Addr == nil {
		t.Fatalf("trace --json --to entry:1: %+v", doc.Entries)
	}
	addr := *doc.Entries[0].Addr
	out, _, err = runSnapview(t, "trace", "--json", "--addr", "0x"+strconv.FormatUint(addr, 16), oom)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Entries) < 2 {
		t.Errorf("trace --addr of the first segment: %d entries", len(doc.Entries))
	}
	testUsageErrors(t, []usageCase{
		{"memviz with filter", []string{"trace", "--format", "memviz", "--from", "peak", oom}, "--from does not apply"},
		{"bad addr", []string{"trace", "--addr", "zz", oom}, `--addr "zz"`},
		{"bad focus", []string{"trace", "--focus", "(", oom}, "--focus"},
		{"bad format", []string{"trace", "--format", "html", oom}, `--format "html"`},
		{"no device", []string{"trace", "-d", "4", oom}, "device 4 has no trace entries"},
	})
}

// TestExportFoldedAt: --at end folds the replayed end state, whose live
// blocks are the file's: the active_allocated lines agree with the
// file's; inactive blocks count as <gaps> only.
func TestExportFoldedAt(t *testing.T) {
	file := bundled("mlp_train.pickle")
	active := func(out string) []string {
		var l []string
		for _, line := range sortedLines(out) {
			if strings.Contains(line, ";active_allocated;") {
				l = append(l, line)
			}
		}
		return l
	}
	fileOut, _, err := runSnapview(t, "export", "--format", "folded", "-o", "-", file)
	if err != nil {
		t.Fatal(err)
	}
	endOut, _, err := runSnapview(t, "export", "--format", "folded", "--at", "end", "-o", "-", file)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := active(fileOut), active(endOut); len(a) == 0 || !slices.Equal(a, b) {
		t.Errorf("--at end: %d active_allocated lines, the file's %d, or they differ", len(b), len(a))
	}
	for _, line := range sortedLines(endOut) {
		if strings.Contains(line, ";inactive;") && !strings.Contains(line, ";inactive;<gaps> ") && !strings.HasSuffix(line, " 0") {
			t.Errorf("--at end: inactive block accounts for bytes: %s", line)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	stdinOut, _, err := runSnapviewIn(t, bytes.NewReader(data), "export", "--format", "folded", "-o", "-", "-")
	if err != nil {
		t.Fatal(err)
	}
	if stdinOut != fileOut {
		t.Error("export from standard input differs from export of the file")
	}
}

// TestExportIdleDevice: in a distributed process's file, the other rank's
// device holds a lone snapshot entry; a moment applies to the devices the
// allocator was used on, and the idle one is left out with a note (export
// and trace refused entry:N and step:K on such files).
func TestExportIdleDevice(t *testing.T) {
	T := filepath.Join("..", "..", "testdata", "snapshots")
	out := filepath.Join(t.TempDir(), "e.pb.gz")
	_, errOut, err := runSnapview(t, "export", "--format", "pprof", "--at", "entry:50", "-o", out, filepath.Join(T, "ddp_rank0.pickle"))
	if err != nil || !strings.Contains(errOut, "device 1 left out: the allocator was never used on it") {
		t.Errorf("export --at entry:50 ddp_rank0: %v, stderr %q", err, errOut)
	}
	if _, _, err := runSnapview(t, "export", "--format", "pprof", "--base-at", "step:10", "--at", "end", "-o", out, filepath.Join(T, "monitor_train.pickle")); err != nil {
		t.Errorf("export --base-at step:10 monitor_train: %v", err)
	}
	text, _, err := runSnapview(t, "trace", "--from", "peak", "--to", "entry:2103", filepath.Join(T, "monitor_train.pickle"))
	if err != nil || !strings.Contains(text, "2103 ") {
		t.Errorf("trace --from peak --to entry:2103 monitor_train: %v\n%s", err, text)
	}
}

// TestTraceAddrSkipsSnapshot: the snapshot marker (address 0, the reserved
// bytes as its size) is no block: --addr never matches it.
func TestTraceAddrSkipsSnapshot(t *testing.T) {
	text, _, err := runSnapview(t, "trace", "--addr", "0x1", filepath.Join("..", "..", "testdata", "snapshots", "monitor_train.pickle"))
	if err != nil || !strings.Contains(text, "0 shown") || strings.Contains(text, "snapshot") {
		t.Errorf("trace --addr 0x1: %v\n%s", err, text)
	}
}
