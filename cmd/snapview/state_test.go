package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestStateUsageErrors(t *testing.T) {
	// The file is never opened: usage is checked first.
	testUsageErrors(t, []usageCase{
		{"no file", []string{"state"}, "state requires FILE"},
		{"bad moment", []string{"state", "--at", "later", "x.pickle"}, `--at "later"`},
		{"bad entry", []string{"state", "--at", "entry:x", "x.pickle"}, "entry:N"},
		{"top 0", []string{"state", "--top", "0", "x.pickle"}, "--top"},
		{"negative frames", []string{"state", "--frames", "-1", "x.pickle"}, "--frames"},
		{"bad device", []string{"state", "--device", "-2", "x.pickle"}, "--device"},
	})
}

func TestStateMissingFile(t *testing.T) {
	testMissingFile(t, "state")
}

func TestStateCorpus(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		args     []string
		want     []string // substrings of stdout
		wantCode int      // exit code when an error is expected
		wantErr  string
	}{
		{"oom", "torch2.11/oom/snapshot.pickle", []string{"--at", "oom"},
			[]string{"Device 0 at oom: after entry 591 of 592 (oom of 128.0 MiB)", "OOM: a request of 128.0 MiB"}, 0, ""},
		{"leak peak", "torch2.11/leak_train/snapshot.pickle", []string{"--at", "peak", "--top", "3"},
			[]string{"Device 0 at the allocated peak: after entry 2,089 of 2,107", "snapgen.py:161 forward"}, 0, ""},
		{"end", "torch2.11/mlp_train/snapshot.pickle", []string{"--at", "end"},
			[]string{"after entry 469 of 470"}, 0, ""},
		{"before the trace", "torch2.11/late_start/snapshot.pickle", []string{"--at", "entry:-1"},
			[]string{"before the first of 189 trace entries", "The trace starts after the run did"}, 0, ""},
		{"time from the first entry", "torch2.11/mlp_train/snapshot.pickle", []string{"--at", "time:1s"},
			[]string{"s after the first entry"}, 0, ""},
		{"time in microseconds from the first entry", "torch2.11/mlp_train/snapshot.pickle", []string{"--at", "time:0"},
			[]string{"after entry 0 of 470"}, 0, ""},
		{"time_us", "torch2.11/mlp_train/snapshot.pickle", []string{"--at", "time:1795997689160113"},
			[]string{"after entry 0 of 470"}, 0, ""},
		{"second device", "torch2.11/two_devices/snapshot.pickle", []string{"--device", "1", "--at", "end"},
			[]string{"Device 1 at end"}, 0, ""},
		{"entry out of range", "torch2.11/mlp_train/snapshot.pickle", []string{"--at", "entry:470"},
			nil, 2, "has 470 trace entries"},
		{"oom:K out of range", "torch2.11/oom/snapshot.pickle", []string{"--at", "oom:2"},
			nil, 2, "has 1 oom entry"},
		{"no oom", "torch2.11/mlp_train/snapshot.pickle", []string{"--at", "oom"},
			nil, 2, "device 0 has no oom entry"},
		{"no trace, no peak", "torch2.11/legacy_segments/snapshot.pickle", []string{"--at", "peak"},
			nil, 2, "device 0 has no trace entries, so no peak: try --at end"},
		{"no trace, the default shows the end", "torch2.11/legacy_segments/snapshot.pickle", nil,
			[]string{"Device 0 at end: no trace entries: the state the file holds", "Segments (3)"}, 0, ""},
		{"no trace, end", "torch2.11/legacy_segments/snapshot.pickle", []string{"--at", "end"},
			[]string{"no trace entries: the state the file holds", "Segments (3)"}, 0, ""},
		{"unknown device", "torch2.11/mlp_train/snapshot.pickle", []string{"--device", "3"},
			nil, 2, "--device 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := sharedSnapshot(t, tt.file)
			out, _, err := runSnapview(t, append(append([]string{"state"}, tt.args...), file)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || exitCode(err) != tt.wantCode {
					t.Fatalf("error = %v (exit %d), want one containing %q with exit code %d", err, exitCode(err), tt.wantErr, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestStateJSON(t *testing.T) {
	file := sharedSnapshot(t, "torch2.11/oom/snapshot.pickle")
	out, _, err := runSnapview(t, "state", "--json", "--at", "oom", file)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Index    int              `json:"index"`
		Stats    map[string]int64 `json:"memory_stats"`
		Segments []struct {
			Blocks []struct {
				State string `json:"state"`
			} `json:"blocks"`
		} `json:"segments"`
		OOM *struct {
			Size       int64 `json:"size"`
			DeviceFree int64 `json:"device_free"`
		} `json:"oom"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if got.Index != 591 || got.OOM == nil || got.OOM.Size != 128<<20 || got.OOM.DeviceFree != 146166382592 {
		t.Errorf("index %d, oom %+v; want 591 and a 128 MiB request with 146166382592 bytes free", got.Index, got.OOM)
	}
	// torch's memory_stats() at the dump, right after the OOM.
	if a := got.Stats["allocated_bytes.all.current"]; a != 3155411968 {
		t.Errorf("allocated_bytes.all.current = %d, want 3155411968", a)
	}
	if len(got.Segments) != 19 {
		t.Errorf("%d segments, want 19", len(got.Segments))
	}
}

// TestStateReservedPeakRecipe follows state --help's way to the reserved
// peak: ranks --json's peak_reserved_entry, then --at entry:N, whose
// reserved bytes are summary's reserved peak (mlp_train: entry 85, 472.0
// MiB; the allocated peak, the header's "peak", is entry 89).
func TestStateReservedPeakRecipe(t *testing.T) {
	const file = "../../testdata/snapshots/mlp_train.pickle"
	if help, _, err := runSnapview(t, "state", "--help"); err != nil || !strings.Contains(help, "peak_reserved_entry") {
		t.Fatalf("state --help names no way to the reserved peak (err %v)", err)
	}
	num := func(args ...string) map[string]any {
		t.Helper()
		out, _, err := runSnapview(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	rk := num("ranks", "--json", file)
	ranks, _ := rk["ranks"].([]any)
	if len(ranks) != 1 {
		t.Fatalf("ranks --json: %d ranks, want 1", len(ranks))
	}
	entry, ok := ranks[0].(map[string]any)["peak_reserved_entry"].(float64)
	if !ok {
		t.Fatalf("ranks --json has no peak_reserved_entry: %v", ranks[0])
	}
	st := num("state", "--json", "--at", fmt.Sprintf("entry:%d", int(entry)), file)
	reserved := st["memory_stats"].(map[string]any)["reserved_bytes.all.current"]
	sum := num("summary", "--json", file)
	peak := sum["devices"].([]any)[0].(map[string]any)["memory_stats"].(map[string]any)["reserved_bytes.all.peak"].(map[string]any)["value"]
	if reserved != peak {
		t.Errorf("state --at entry:%d: reserved %v, summary's reserved peak %v", int(entry), reserved, peak)
	}
}
