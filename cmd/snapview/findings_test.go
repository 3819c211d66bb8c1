package main

import (
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
