package main

import (
	"bytes"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snapview/snapview/internal/corpus"
)

func TestOutputWidth(t *testing.T) {
	env := func(cols string) func(string) string {
		return func(k string) string {
			if k == "COLUMNS" {
				return cols
			}
			return ""
		}
	}
	tests := []struct {
		flag int
		cols string
		want int
	}{
		{0, "", 120},    // not a terminal
		{0, "80", 80},   // COLUMNS
		{0, "abc", 120}, // a bad COLUMNS is ignored
		{100, "80", 100},
	}
	for _, tt := range tests {
		got, err := outputWidth(tt.flag, &bytes.Buffer{}, env(tt.cols))
		if err != nil || got != tt.want {
			t.Errorf("outputWidth(%d, COLUMNS=%q) = %d, %v; want %d", tt.flag, tt.cols, got, err, tt.want)
		}
	}
	if _, err := outputWidth(-1, &bytes.Buffer{}, env("")); err == nil || exitCode(err) != 2 {
		t.Errorf("outputWidth(-1) = %v, want a usage error", err)
	}
}

// TestWidthFlag runs the text commands with --width 80 on a shared file
// and checks every line.
func TestWidthFlag(t *testing.T) {
	file := sharedSnapshot(t, "torch2.11/cuda_graph/snapshot.pickle")
	for _, args := range [][]string{{"summary"}, {"segments"}, {"state"}, {"leaks"}, {"info"}} {
		out, _, err := runSnapview(t, append(append(args, "--width", "80"), file)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > 80 && !strings.Contains(line, file) {
				t.Errorf("%v --width 80: line of %d columns: %q", args, n, line)
			}
		}
	}
	for _, w := range []string{"0", "-5"} {
		if _, _, err := runSnapview(t, "summary", "--width", w, file); err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--width must be positive") {
			t.Errorf("--width %s: %v, want a usage error", w, err)
		}
	}
	// JSON is never wrapped.
	out, _, err := runSnapview(t, "summary", "--json", "--width", "60", file)
	if err != nil || !strings.HasPrefix(out, "{") {
		t.Errorf("summary --json --width 60: %v %.40q", err, out)
	}
}

// TestHelpWidth checks that the whole --help of the root and of every
// command fits COLUMNS=80: the list of commands and the flags (cobra's
// template wrote them on one line each), and the texts and examples.
func TestHelpWidth(t *testing.T) {
	t.Setenv("COLUMNS", "80")
	names := []string{""}
	for _, c := range newRootCmd().Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d commands: %v", len(names), names)
	}
	for _, name := range names {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		args := []string{"--help"}
		if name != "" {
			args = []string{name, "--help"}
		}
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if name == "" && !strings.Contains(out.String(), "Available Commands:") {
			t.Fatalf("--help lacks its commands:\n%s", out.String())
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > 80 {
				t.Errorf("%s --help at COLUMNS=80: line of %d columns: %q", name, n, line)
			}
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, err := runSnapview(t, "--version")
	if err != nil || !strings.HasPrefix(out, "snapview ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version = %q, %v; want 'snapview VERSION goX'", out, err)
	}
}

// TestIssue11Messages checks the wording fixes on real files: --steps
// slices, the expandable-segments count, a memory_stats() file and
// --frames.
func TestIssue11Messages(t *testing.T) {
	leak := sharedSnapshot(t, "torch2.11/leak_train/snapshot.pickle")
	out, _, err := runSnapview(t, "leaks", "--steps", "slices", leak)
	if err != nil || !strings.Contains(out, "as --steps slices asks") || strings.Contains(out, "no training steps found") {
		t.Errorf("leaks --steps slices: %v\n%s", err, out)
	}

	p32 := sharedSnapshot(t, "public/p32-3dev-expandable-oom.pickle")
	out, _, err = runSnapview(t, "state", "--at", "oom", p32)
	if err != nil || strings.Contains(out, "| Segments ") || !strings.Contains(out, "cudaMalloc segments only") ||
		!strings.Contains(out, "Segments (8, 8 of them mapped ranges of expandable segments)") {
		t.Errorf("state --at oom on an expandable file: %v\n%s", err, out)
	}

	stats := sharedSnapshot(t, "torch2.11/leak_train/stats.json")
	_, _, err = runSnapview(t, "state", stats)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "a memory_stats() dump, not a memory snapshot") ||
		!strings.Contains(err.Error(), "summary reads it (--format torch") {
		t.Errorf("state stats.json: %v, want it named a memory_stats() dump", err)
	}

	lines := func(frames string) int {
		out, _, err := runSnapview(t, "state", "--frames", frames, leak)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, l := range strings.Split(out[strings.Index(out, "\nS1: "):], "\n")[2:] {
			if !strings.HasPrefix(l, "    ") {
				break
			}
			n++
		}
		return n
	}
	if one, two := lines("1"), lines("2"); one != 2 || two != 3 {
		t.Errorf("S1 has %d lines with --frames 1 and %d with --frames 2, want 2 and 3 (frames and '... N more lines')", one, two)
	}
}

// TestNewerViewsWidth runs the views that lay out their own tables
// (whatif, ranks, diff, stats, smi, trace, summary of a memory_stats()
// dump) at --width 80 and 120 on real files, shared and of testdata, and
// checks that every line keeps within the width, the files' paths aside.
func TestNewerViewsWidth(t *testing.T) {
	shared := func(rel string) string { return sharedSnapshot(t, rel) }
	td := func(name string) string { return filepath.Join("..", "..", "testdata", "snapshots", name) }
	runs := [][]string{
		{"whatif", td("mlp_train.pickle")},
		{"whatif", shared("whatif/varlen_train/default/snapshot.pickle.xz")},
		{"whatif", shared("torch2.11/oom/snapshot.pickle")},
		{"ranks", td("ddp_rank0.pickle"), td("ddp_rank1.pickle")},
		{"ranks", shared("torch2.11/two_devices/snapshot.pickle"), shared("torch2.11/mlp_train/snapshot.pickle"), shared("torch2.11/leak_train/snapshot.pickle")},
		{"diff", td("ddp_rank0.pickle"), td("ddp_rank1.pickle")},
		{"diff", shared("torch2.11/legacy_segments/snapshot.pickle"), shared("torch2.11/state_only/snapshot.pickle")},
		{"diff", shared("whatif/varlen_train/default/snapshot.pickle.xz"), shared("whatif/varlen_train/roundup_4/snapshot.pickle.xz")},
		{"diff", "--base-at", "peak", "--at", "end", shared("torch2.11/leak_train/snapshot.pickle")},
		{"trace", td("mlp_train.pickle")},
		{"trace", shared("torch2.11/multistream/snapshot.pickle")},
		{"trace", shared("torch2.11/oom/snapshot.pickle")},
		{"trace", shared("public/p32-3dev-expandable-oom.pickle")},
	}
	for _, pat := range []string{"*.stats.jsonl", "*.stats.json"} {
		m, _ := filepath.Glob(td(pat))
		for _, f := range m {
			runs = append(runs, []string{"stats", f})
		}
	}
	m := corpus.Glob(t, "torch2.11/*/stats.json", 16)
	m2, _ := filepath.Glob(td("*.stats.json"))
	for _, f := range append(m, m2...) {
		runs = append(runs, []string{"summary", f}, []string{"stats", f})
	}
	m, _ = filepath.Glob(td("*.csv"))
	for _, f := range m {
		runs = append(runs, []string{"smi", f})
	}
	for _, args := range runs {
		for _, width := range []string{"80", "120"} {
			out, _, err := runSnapview(t, append([]string{args[0], "--width", width}, args[1:]...)...)
			if err != nil {
				t.Errorf("%v --width %s: %v", args, width, err)
				continue
			}
			w, _ := strconv.Atoi(width)
			for i, line := range strings.Split(out, "\n") {
				if slices.ContainsFunc(args[1:], func(f string) bool { return strings.Contains(line, f) }) {
					continue
				}
				if n := utf8.RuneCountInString(line); n > w {
					t.Errorf("%v --width %s, line %d: %d columns: %q", args, width, i+1, n, line)
				}
			}
		}
	}
}
