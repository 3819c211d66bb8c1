package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// jsonKeys returns the keys of a JSON object, sorted.
func jsonKeys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestDiffJSONSchema: diff --json has the keys its --help documents, and
// the stacks add up to the allocated figure on each side.
func TestDiffJSONSchema(t *testing.T) {
	path := sharedSnapshot(t, "torch2.11/leak_train/snapshot.pickle")
	out, _, err := runSnapview(t, "diff", "--json", path, "--base-at", "step:3", "--at", "end")
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &top); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"":        {"base", "figures", "new", "notes", "recording", "settings", "stacks"},
		"base":    {"at", "device", "entry", "file", "step", "time_us"},
		"figures": {"base", "delta", "exactness", "name", "new"},
		"stacks": {"base_bytes", "base_count", "base_requested_bytes", "delta_bytes", "frames", "key",
			"new_bytes", "new_count", "new_requested_bytes", "status"},
	}
	if diff := cmp.Diff(want[""], jsonKeys(t, json.RawMessage(out))); diff != "" {
		t.Errorf("top-level keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want["base"], jsonKeys(t, top["base"])); diff != "" {
		t.Errorf("base keys (-want +got):\n%s", diff)
	}
	var d struct {
		Base    struct{ At string }
		Figures []json.RawMessage
		Stacks  []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Base.At != "step:3" {
		t.Errorf("base at %q, want step:3", d.Base.At)
	}
	for _, k := range []string{"figures", "stacks"} {
		list := d.Figures
		if k == "stacks" {
			list = d.Stacks
		}
		if len(list) == 0 {
			t.Fatalf("no %s", k)
		}
		if diff := cmp.Diff(want[k], jsonKeys(t, list[0])); diff != "" {
			t.Errorf("%s keys (-want +got):\n%s", k, diff)
		}
	}
	var full struct {
		Figures []struct {
			Name      string
			Base, New int64
		}
		Stacks []struct {
			BaseBytes int64 `json:"base_bytes"`
			NewBytes  int64 `json:"new_bytes"`
			Frames    []struct{ Line int64 }
		}
	}
	if err := json.Unmarshal([]byte(out), &full); err != nil {
		t.Fatal(err)
	}
	var base, new int64
	for _, s := range full.Stacks {
		base += s.BaseBytes
		new += s.NewBytes
	}
	for _, f := range full.Figures {
		if f.Name == "allocated_bytes.all.current" && (f.Base != base || f.New != new) {
			t.Errorf("stacks add up to %d -> %d, allocated is %d -> %d", base, new, f.Base, f.New)
		}
	}
	if l := full.Stacks[0].Frames[0].Line; l != 161 {
		t.Errorf("first stack at line %d, want the retained graph's snapgen.py:161", l)
	}
}

// TestDiffBadInputEitherSide: a bad file on either side is an error naming
// that file, exit code 1.
func TestDiffBadInputEitherSide(t *testing.T) {
	good := filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle")
	bad := filepath.Join(t.TempDir(), "bad.pickle")
	if err := os.WriteFile(bad, []byte("not a pickle"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{good, bad}, {bad, good}} {
		_, _, err := runSnapview(t, append([]string{"diff"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), bad) || exitCode(err) != 1 {
			t.Errorf("diff %q: error %v (exit %d), want one naming %s, exit 1", args, err, exitCode(err), bad)
		}
		_, _, err = runSnapview(t, append([]string{"ranks"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), bad) || exitCode(err) != 1 {
			t.Errorf("ranks %q: error %v (exit %d), want one naming %s, exit 1", args, err, exitCode(err), bad)
		}
	}
}

func TestDiffUsageErrors(t *testing.T) {
	good := filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle")
	testUsageErrors(t, []usageCase{
		{"one file, no moments", []string{"diff", good}, "--base-at and --at"},
		{"one file, one moment", []string{"diff", good, "--at", "end"}, "--base-at and --at"},
		{"three files", []string{"diff", good, good, good}, "got 3 arguments"},
		{"bad moment", []string{"diff", good, good, "--at", "later"}, "want peak"},
		{"no such step", []string{"diff", good, good, "--at", "step:99"}, good},
		{"fold and full", []string{"diff", good, good, "--fold", "--full"}, "--fold and --full"},
		{"no such device", []string{"diff", good, good, "--device", "3"}, "no device 3"},
		{"ranks: no files", []string{"ranks"}, "ranks takes"},
		{"ranks: stdin", []string{"ranks", "-"}, "standard input"},
		{"both from stdin", []string{"diff", "-", "-"}, "standard input (-) holds one snapshot"},
	})
}

// TestDiffSameFile: a file against itself has no change.
func TestDiffSameFile(t *testing.T) {
	good := filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle")
	out, _, err := runSnapview(t, "diff", good, good)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Allocator settings: the same.", "same allocations", "| total  | 467.0 MiB | 467.0 MiB |   0 B |"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestRanksJSON: ranks --json on the two devices of one file has the keys
// its --help documents and flags device 1.
func TestRanksJSON(t *testing.T) {
	path := sharedSnapshot(t, "torch2.11/two_devices/snapshot.pickle")
	out, _, err := runSnapview(t, "ranks", "--json", path)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Ranks    []json.RawMessage
		Outliers []struct{ Rank, Device int }
		Stacks   []struct{ Frames []struct{ Line int64 } }
		Outlier  int `json:"outlier_rank"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Ranks) != 2 {
		t.Fatalf("%d ranks, want the file's 2 devices", len(j.Ranks))
	}
	want := []string{"coverage", "current_allocated_bytes", "current_reserved_bytes", "device", "exactness", "file",
		"name", "num_alloc_retries", "ooms", "peak_allocated_bytes", "peak_allocated_entry", "peak_allocated_step", "peak_allocated_time_us",
		"peak_reserved_bytes", "peak_reserved_entry", "peak_reserved_step", "peak_reserved_time_us", "rank", "reserved_minus_allocated_bytes"}
	if diff := cmp.Diff(want, jsonKeys(t, j.Ranks[0])); diff != "" {
		t.Errorf("rank keys (-want +got):\n%s", diff)
	}
	if j.Outlier != 1 || len(j.Outliers) == 0 || j.Outliers[0].Device != 1 {
		t.Errorf("outlier rank %d, outliers %+v; want device 1", j.Outlier, j.Outliers)
	}
	if len(j.Stacks) == 0 || j.Stacks[0].Frames[0].Line != 47 {
		t.Errorf("most varying stack %+v, want multigpu.py:47", j.Stacks)
	}
}

// TestRanksDir reads the snapshot files of a directory, in name order.
func TestRanksDir(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rank1.pickle", "rank0.pickle", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err := runSnapview(t, "ranks", dir)
	if err != nil {
		t.Fatal(err)
	}
	i0, i1 := strings.Index(out, "rank0.pickle"), strings.Index(out, "rank1.pickle")
	if i0 < 0 || i1 < i0 || strings.Contains(out, "notes.txt") {
		t.Errorf("want rank0.pickle then rank1.pickle and no notes.txt:\n%s", out)
	}
	if !strings.Contains(out, "No rank is more than 10% away from the median rank.") {
		t.Errorf("identical ranks flagged:\n%s", out)
	}
}

// TestReportSeveralFiles: report of several files puts the ranks table on
// top, gives every device section its own ids, and draws every timeline
// on one scale; --base puts the diff on top.
func TestReportSeveralFiles(t *testing.T) {
	two := sharedSnapshot(t, "torch2.11/two_devices/snapshot.pickle")
	mlp := filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle")
	out := filepath.Join(t.TempDir(), "r.html")
	if _, _, err := runSnapview(t, "report", "-o", out, two, mlp); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`id="compare"`, "Over the ranks", `id="timeline_f0_d0"`, `id="timeline_f0_d1"`, `id="timeline_f1_d0"`, "Cached at peak", "Coverage"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The page scrolls: no column is left out to fit a terminal.
	if strings.Contains(page, "Left out to fit") {
		t.Error("the page's ranks table leaves columns out")
	}
	if n := strings.Count(page, `"yInterval":134217728`); n != 3 {
		t.Errorf("%d timelines with the shared 128 MiB ticks, want 3", n)
	}
	if _, _, err := runSnapview(t, "report", "-o", out, "--base", mlp, two); err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(out); err != nil {
		t.Fatal(err)
	}
	if page := string(b); !strings.Contains(page, "memory_stats() at each moment") || !strings.Contains(page, `id="timeline_f1_d0"`) {
		t.Error("report --base lacks the diff or the second file's timeline")
	}
	testUsageErrors(t, []usageCase{{"base with two files", []string{"report", "--base", mlp, mlp, mlp}, "got 2 files"}})
}

// TestRanksDDP: the two ranks of a real DDP run on two H200s
// (testdata/gen/gpurec.py); rank 1 allocated an extra buffer at the line
// its .meta.json names. ranks leaves out each file's idle device (a lone
// snapshot entry), flags rank 1 and names the buffer's stack first.
func TestRanksDDP(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "snapshots")
	var meta struct {
		ExtraBuffer struct {
			Bytes int64 `json:"bytes"`
			Line  int64 `json:"line"`
			Rank  int   `json:"rank"`
		} `json:"extra_buffer"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "ddp_rank1.meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runSnapview(t, "ranks", "--json", filepath.Join(dir, "ddp_rank0.pickle"), filepath.Join(dir, "ddp_rank1.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "never used on") {
		t.Errorf("stderr does not say the idle devices were left out:\n%s", stderr)
	}
	var j struct {
		Ranks []struct {
			File   string
			Device int
		}
		Outlier int `json:"outlier_rank"`
		Stacks  []struct {
			Frames []struct{ Line int64 }
			Spread int64
		}
		Diff struct {
			Stacks []struct {
				Frames     []struct{ Line int64 }
				DeltaBytes int64 `json:"delta_bytes"`
				Status     string
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Ranks) != 2 || j.Ranks[1].Device != meta.ExtraBuffer.Rank {
		t.Fatalf("ranks %+v, want one per file, rank 1 on device 1", j.Ranks)
	}
	if j.Outlier != meta.ExtraBuffer.Rank {
		t.Errorf("outlier rank %d, want %d", j.Outlier, meta.ExtraBuffer.Rank)
	}
	if len(j.Stacks) == 0 || j.Stacks[0].Frames[0].Line != meta.ExtraBuffer.Line || j.Stacks[0].Spread != meta.ExtraBuffer.Bytes {
		t.Errorf("most varying stack %+v, want gpurec.py:%d varying by %d", j.Stacks, meta.ExtraBuffer.Line, meta.ExtraBuffer.Bytes)
	}
	if d := j.Diff.Stacks; len(d) == 0 || d[0].Frames[0].Line != meta.ExtraBuffer.Line || d[0].DeltaBytes != meta.ExtraBuffer.Bytes || d[0].Status != "new" {
		t.Errorf("outlier diff starts with %+v, want the new buffer at line %d", d[:1], meta.ExtraBuffer.Line)
	}
}

// TestBaseAtErrorsNameTheFlag: a wrong --base-at is called --base-at, in
// diff and export, both when it does not parse and when the file lacks it.
func TestBaseAtErrorsNameTheFlag(t *testing.T) {
	f := filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle")
	out := filepath.Join(t.TempDir(), "x.pb.gz")
	for _, args := range [][]string{
		{"diff", f, "--base-at", "entry:999999", "--at", "peak"},
		{"diff", f, "--base-at", "bogus", "--at", "peak"},
		{"export", "--format", "pprof", "--base-at", "bogus", "-o", out, f},
		{"export", "--format", "pprof", "--base-at", "entry:999999", "-o", out, f},
	} {
		_, _, err := runSnapview(t, args...)
		if err == nil || !strings.Contains(err.Error(), "--base-at") {
			t.Errorf("%v: %v, want an error naming --base-at", args, err)
		}
	}
}
