package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTraceRange: a reversed range is a usage error, errors name the flag
// given, and a time window lists only the entries inside it (findings 9
// and 10 of the new-user trial).
func TestTraceRange(t *testing.T) {
	file := fixture(t, "mlp_train.pickle")
	errs := []struct {
		args []string
		want string
	}{
		{[]string{"--from", "peak", "--to", "entry:3"}, "--from peak comes after --to entry:3"},
		{[]string{"--from", "entry:99999"}, "--from entry:99999"},
		{[]string{"--to", "entry:99999"}, "--to entry:99999"},
		{[]string{"--from", "entry:x"}, "--from entry:x"},
	}
	for _, tc := range errs {
		_, _, err := runSnapview(t, append(append([]string{"trace"}, tc.args...), file)...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "--at") {
			t.Errorf("trace %v: %v (exit %d), want exit 2 naming %q", tc.args, err, exitCode(err), tc.want)
		}
	}
	// mlp_train's entries 8 and 9 fall at 0.019 s and 4.07 s.
	out, _, err := runSnapview(t, "trace", "--from", "time:4s", "--to", "time:4.01s", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "0 shown") || strings.Contains(out, "alloc") {
		t.Errorf("trace --from time:4s --to time:4.01s lists entries outside the window:\n%s", out)
	}
	out, _, err = runSnapview(t, "trace", "--from", "time:19ms", "--to", "time:20ms", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "1 shown (entries 8 to 8)") {
		t.Errorf("trace --from time:19ms --to time:20ms:\n%s", out)
	}
}

// TestReportSeveralFilesMonitor: --smi and --stats with several files (or
// --base) are refused with exit 2 naming the flags, not dropped (finding 2).
func TestReportSeveralFilesMonitor(t *testing.T) {
	a, b := fixture(t, "mlp_train.pickle"), fixture(t, "monitor_train.pickle")
	smi, stats := fixture(t, "monitor_train.smi.csv"), fixture(t, "monitor_train.stats.jsonl")
	out := t.TempDir() + "/r.html"
	for _, args := range [][]string{
		{"--smi", smi, a, b},
		{"--stats", stats, a, b},
		{"--smi", smi, "--stats", stats, "--base", a, b},
	} {
		_, _, err := runSnapview(t, append([]string{"report", "-o", out}, args...)...)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("report %v: %v, want exit 2", args, err)
			continue
		}
		for _, fl := range []string{"--smi", "--stats"} {
			if slices.Contains(args, fl) && !strings.Contains(err.Error(), fl) {
				t.Errorf("report %v: %q does not name %s", args, err, fl)
			}
		}
	}
}

// TestExportFoldedSeveralFiles: with several files every folded line
// starts with a frame naming its file (finding 11); a file given twice
// keeps its two copies apart.
func TestExportFoldedSeveralFiles(t *testing.T) {
	a, b := fixture(t, "mlp_train.pickle"), fixture(t, "monitor_train.pickle")
	for _, at := range [][]string{nil, {"--at", "peak"}} {
		args := append([]string{"export", "--format", "folded", "-o", "-"}, at...)
		out, _, err := runSnapview(t, append(args, a, b, a)...)
		if err != nil {
			t.Fatal(err)
		}
		roots := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			root, rest, _ := strings.Cut(line, ";")
			if !strings.HasPrefix(rest, "stream_") {
				t.Fatalf("export folded %v: line without a file frame: %q", at, line)
			}
			roots[root]++
		}
		for _, want := range []string{a, b, a + "#2"} {
			if roots[want] == 0 {
				t.Errorf("export folded %v: no line under %q (%v)", at, want, roots)
			}
		}
		if roots[a] != roots[a+"#2"] {
			t.Errorf("export folded %v: %d lines for %s, %d for its second copy", at, roots[a], a, roots[a+"#2"])
		}
	}
	out, _, err := runSnapview(t, "export", "--format", "folded", "-o", "-", a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "stream_") {
		t.Errorf("export folded of one file has a file frame: %.80q", out)
	}
}

// TestExportAtHelpAndOOM: export --help states each format's default --at
// (finding 15), and pprof --at oom on a file without an oom prints the
// error alone, no note besides.
func TestExportAtHelpAndOOM(t *testing.T) {
	out, _, err := runSnapview(t, "export", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, `(default "peak")`) || !strings.Contains(out, "folded the segments the file holds") {
		t.Errorf("export --help on --at:\n%s", out)
	}
	_, stderr, err := runSnapview(t, "export", "--format", "pprof", "--at", "oom", "-o", t.TempDir()+"/x.pb.gz", fixture(t, "mlp_train.pickle"))
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "no oom entry") {
		t.Fatalf("export pprof --at oom: %v", err)
	}
	if strings.Contains(stderr, "note:") {
		t.Errorf("export pprof --at oom prints a note besides the error: %q", stderr)
	}
}

// TestRanksNamedByFile: a rank is named by the number its file name gives,
// never by its place among the arguments; a directory is read in numeric
// order (finding 1).
func TestRanksNamedByFile(t *testing.T) {
	r0, r1 := fixture(t, "ddp_rank0.pickle"), fixture(t, "ddp_rank1.pickle")
	out, _, err := runSnapview(t, "ranks", "--json", r1, r0)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Ranks []struct {
			Name string
			Rank *int
			File string
		}
		Outliers []struct{ Rank int }
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Ranks) != 2 || j.Ranks[0].Rank == nil || *j.Ranks[0].Rank != 1 || j.Ranks[0].Name != "rank 1" || *j.Ranks[1].Rank != 0 {
		t.Errorf("ranks ddp_rank1 ddp_rank0 --json: %+v", j.Ranks)
	}
	text, _, err := runSnapview(t, "ranks", r1, r0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Diffed: rank 1 against the median rank, rank 0") ||
		!strings.Contains(text, "  rank 1 (") || strings.Contains(text, "  rank 0 (") {
		t.Errorf("ranks ddp_rank1 ddp_rank0 names ranks by argument order:\n%s", text)
	}

	dir := t.TempDir()
	for name, src := range map[string]string{"rank10.pickle": r1, "rank2.pickle": r0} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, _, err = runSnapview(t, "ranks", "--json", dir)
	if err != nil {
		t.Fatal(err)
	}
	j.Ranks = nil
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Ranks) != 2 || filepath.Base(j.Ranks[0].File) != "rank2.pickle" || *j.Ranks[0].Rank != 2 || *j.Ranks[1].Rank != 10 {
		t.Errorf("ranks DIR: %+v, want rank2 then rank10", j.Ranks)
	}
}

// TestRanksUnknownLeftOut: a file with no trace has unknown peaks; the
// min/median/max and the peak timing leave it out and say so, and --json
// prints null, not 0, for what the text shows as '?' (finding 6).
func TestRanksUnknownLeftOut(t *testing.T) {
	legacy := filepath.Join(sharedSnapshot(t, "torch2.11/legacy_segments"), "snapshot.pickle")
	stateOnly := filepath.Join(sharedSnapshot(t, "torch2.11/state_only"), "snapshot.pickle")
	text, _, err := runSnapview(t, "ranks", legacy, stateOnly)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Left out of what follows, their peaks unknown: legacy_segments/snapshot.pickle") ||
		strings.Contains(text, "(legacy_segments/snapshot.pickle) |") || strings.Contains(text, "same step") {
		t.Errorf("ranks with a file without trace:\n%s", text)
	}
	out, _, err := runSnapview(t, "ranks", "--json", legacy, stateOnly)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Ranks   []map[string]any
		Unknown []int                                        `json:"unknown_ranks"`
		Spreads []struct{ MinRank, MedianRank, MaxRank int } `json:"spreads"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"peak_allocated_bytes", "peak_reserved_bytes", "reserved_minus_allocated_bytes", "ooms", "num_alloc_retries"} {
		if v, ok := j.Ranks[0][k]; !ok || v != nil {
			t.Errorf("--json %s of a file without trace = %v, want null", k, v)
		}
	}
	if !slices.Equal(j.Unknown, []int{0}) {
		t.Errorf("unknown_ranks = %v, want [0]", j.Unknown)
	}
}

// TestDiffIdleDevice: diff --device N on a file whose allocator never used
// device N says so in the notes, text and JSON (finding 13).
func TestDiffIdleDevice(t *testing.T) {
	r0, r1 := fixture(t, "ddp_rank0.pickle"), fixture(t, "ddp_rank1.pickle")
	out, _, err := runSnapview(t, "diff", "--device", "1", r0, r1)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "the allocator was never used on device 1") {
		t.Errorf("diff --device 1 rank0 rank1 has no note on rank 0's idle device 1:\n%s", out)
	}
	out, _, err = runSnapview(t, "diff", "--json", "--device", "1", r0, r1)
	if err != nil {
		t.Fatal(err)
	}
	var j struct{ Notes []string }
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Notes) == 0 || !strings.Contains(j.Notes[0], "ddp_rank0.pickle: the allocator was never used on device 1") {
		t.Errorf("diff --json notes: %q", j.Notes)
	}
	out, _, err = runSnapview(t, "diff", "--device", "1", r1, r1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "never used") {
		t.Errorf("diff --device 1 on a device used on both sides notes it idle:\n%s", out)
	}
}
