package main

import (
	"strings"
	"testing"
)

// TestFieldFiles: the files of other producers in ../shared/snapshots/field
// (and the real skip_actions recording) give the behaviour its README
// asks for, on stdout, with exit status 0.
func TestFieldFiles(t *testing.T) {
	for _, tc := range []struct {
		file       string
		args       []string
		want, bad  []string
		wantStderr []string
	}{
		{
			file: "field/mlx-export.pickle", args: []string{"summary"},
			want:       []string{"Segments: none in the file; this end state comes from the trace alone.", "Peak: unknown"},
			bad:        []string{"(exact)", "are exact"},
			wantStderr: []string{"device_traces[][].user_metadata: want str, got dict; skipped on 12 trace entries, the first at index 0"},
		},
		{
			file: "field/mlx-export.pickle", args: []string{"info"},
			want: []string{"end state: not checked: the file has no segments"},
			bad:  []string{"ends in the file's segments"},
		},
		{
			file: "field/torch-npu-trimmed.pickle", args: []string{"info"},
			want: []string{"torch_npu's round_up(request + 32, 512); 37 active blocks: 25 fit CUDA's round_size, 37 fit",
				"history: peaks and totals are exact"},
		},
		{
			file: "field/torch-npu-trimmed.pickle", args: []string{"state", "--at", "peak"},
			want: []string{"at the allocated peak: after entry 39 of 44", "| Allocated        | 560.0 KiB |"},
		},
		{
			file: "field/torch-npu-trimmed.pickle", args: []string{"summary", "--json"},
			want: []string{`"allocated_bytes.all.peak": {
        "value": 573440,
        "exactness": "exact"`, `"requested_bytes.all.peak": {
        "value": 558384,`, `"allocations": 37,`},
		},
		{
			file: "field/slice-active-blocks-only.json", args: []string{"summary"},
			want: []string{"153.3 MiB free inside the segments (largest free block 64.0 MiB)", "lack inactive blocks",
				"a window: the trace misses the start", "Peak: unknown"},
			bad: []string{"wrapped:", "started late:"},
		},
		{
			file: "torch2.11/skip_free_requested/snapshot.pickle", args: []string{"info"},
			want: []string{"skip_actions=free_requested", "history: peaks and totals are exact"},
		},
	} {
		t.Run(tc.file+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			p := sharedSnapshot(t, tc.file)
			out, errOut, err := runSnapview(t, append(tc.args, p)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			// Words, not line breaks: the text wraps.
			norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
			for _, w := range tc.want {
				if !strings.Contains(norm(out), norm(w)) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, b := range tc.bad {
				if strings.Contains(norm(out), norm(b)) {
					t.Errorf("stdout has %q:\n%s", b, out)
				}
			}
			for _, w := range tc.wantStderr {
				if strings.Count(errOut, w) != 1 {
					t.Errorf("stderr should say %q once:\n%s", w, errOut)
				}
			}
		})
	}
}
