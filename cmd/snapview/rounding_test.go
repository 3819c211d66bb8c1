package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestRoundingFlag: on the whole torch_npu run (testdata/gen/npugen.py; no
// active block at the end) the default reads NPU's rule from the trace and
// every view has exact peaks; --rounding cuda overrides it (the replay then
// fails and the peaks are unknown, said on stderr) and --rounding npu agrees
// with auto; info and summary say which rule and from what; a bad value is a
// usage error.
func TestRoundingFlag(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "snapshots", "npu_whole_run.pickle")
	for _, tc := range []struct {
		flag   []string
		peak   string // in summary's text
		stderr string
	}{
		{nil, "Peak: 90.1 MiB allocated, 92.0 MiB reserved (exact)", ""},
		{[]string{"--rounding", "auto"}, "Peak: 90.1 MiB allocated, 92.0 MiB reserved (exact)", ""},
		{[]string{"--rounding", "npu"}, "Peak: 90.1 MiB allocated, 92.0 MiB reserved (exact)", ""},
		{[]string{"--rounding", "cuda"}, "Peak: unknown", "no free block starts there"},
	} {
		out, errOut, err := runSnapview(t, append(append([]string{"summary"}, tc.flag...), file)...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, tc.peak) || (tc.stderr == "") != (errOut == "") || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("summary %v: stdout lacks %q or stderr %q is not %q:\n%s", tc.flag, tc.peak, errOut, tc.stderr, out)
		}
	}
	out, _, err := runSnapview(t, "info", file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "rounding (inferred): torch_npu's round_up(request + 32, 512); no active block with a requested"; !strings.Contains(out, want) ||
		!strings.Contains(out, "so from the trace") {
		t.Errorf("info does not say the rule came from the trace:\n%s", out)
	}
	out, _, err = runSnapview(t, "info", "--json", "--rounding", "cuda", file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"forced": "cuda"`) || !strings.Contains(out, `"from_trace": true`) {
		t.Errorf("info --json --rounding cuda lacks forced and from_trace:\n%.3000s", out)
	}
	_, _, err = runSnapview(t, "summary", "--rounding", "tpu", file)
	var u *usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), `--rounding "tpu": want cuda, npu or auto`) {
		t.Errorf("--rounding tpu: %v, want a usage error", err)
	}
}
