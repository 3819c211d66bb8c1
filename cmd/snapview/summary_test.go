package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSummaryUsageErrors(t *testing.T) {
	// The file is never opened: usage is checked first.
	testUsageErrors(t, []usageCase{
		{"no file", []string{"summary"}, "summary requires FILE"},
		{"two files", []string{"summary", "a", "b"}, "takes one FILE, got 2 arguments"},
		{"bad format", []string{"summary", "--format", "html", "x.pickle"}, `--format "html"`},
		{"negative device", []string{"summary", "--device", "-1", "x.pickle"}, `"-1"`},
		{"device not a number", []string{"summary", "--device", "one", "x.pickle"}, "device ordinal"},
		{"unknown flag", []string{"summary", "--top", "3", "x.pickle"}, "unknown flag"},
		{"segments no file", []string{"segments"}, "segments requires FILE"},
		{"segments bad device", []string{"segments", "-d", "x", "x.pickle"}, "device ordinal"},
		{"unknown command", []string{"sumary", "x.pickle"}, `unknown command "sumary" for "snapview"`},
	})
}

func TestSummaryMissingFile(t *testing.T) {
	testMissingFile(t, "summary")
}

func TestSummaryHelp(t *testing.T) {
	for _, cmd := range []string{"summary", "segments"} {
		out, _, err := runSnapview(t, cmd, "--help")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		switch cmd {
		case "summary":
			want = []string{"text", "torch", "json", "memory_summary", "first allocation", "cudaMalloc retries", "'?'", "lower_bound", "Examples:", "--format torch --device 1"}
		case "segments":
			want = []string{"_memory_viz stats", "pending free", "--json", "Examples:"}
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s --help lacks %q", cmd, w)
			}
		}
	}
}

func TestSummaryTorchTwoDevices(t *testing.T) {
	file := sharedSnapshot(t, "torch2.11/two_devices/snapshot.pickle")
	for dev, name := range []string{"snapshot.summary.dev0.txt", "snapshot.summary.dev1.txt"} {
		want, err := os.ReadFile(filepath.Join(filepath.Dir(file), name))
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := runSnapview(t, "summary", "--format", "torch", "--device", []string{"0", "1"}[dev], file)
		if err != nil {
			t.Fatal(err)
		}
		wl, gl := strings.Split(string(want), "\n"), strings.Split(out, "\n")
		if len(wl) != len(gl) {
			t.Fatalf("device %d: %d lines, torch has %d", dev, len(gl), len(wl))
		}
		for i := range wl {
			if len(gl[i]) != len(wl[i]) {
				t.Errorf("device %d line %d: %d bytes, torch's has %d: %q", dev, i+1, len(gl[i]), len(wl[i]), gl[i])
			}
			// The Cur Usage column is exact; the rest is exact or marked.
			wc, gc := strings.Split(wl[i], "|"), strings.Split(gl[i], "|")
			if len(wc) == 7 && wc[2] != gc[2] {
				t.Errorf("device %d line %d: Cur Usage %q, torch has %q", dev, i+1, gc[2], wc[2])
			}
		}
	}
	// Without --device, both devices, one after the other.
	out, _, err := runSnapview(t, "summary", "-f", "torch", file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "PyTorch CUDA memory summary, device ID"); n != 2 {
		t.Errorf("summary -f torch printed %d tables, want 2", n)
	}
	if _, _, err := runSnapview(t, "summary", "--device", "5", file); err == nil || exitCode(err) != 2 {
		t.Errorf("--device 5 on a two-device file: error %v, want a usage error", err)
	}
}

func TestSummaryJSON(t *testing.T) {
	file := sharedSnapshot(t, "torch2.11/legacy_segments/snapshot.pickle")
	out, _, err := runSnapview(t, "summary", "--format", "json", file)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Devices []struct {
			Device      int
			MemoryStats map[string]struct {
				Value     *int64
				Exactness string
			} `json:"memory_stats"`
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if len(got.Devices) != 1 {
		t.Fatalf("%d devices, want 1", len(got.Devices))
	}
	// A bare segment list: current figures exact, the rest unknown.
	ms := got.Devices[0].MemoryStats
	if f := ms["reserved_bytes.all.current"]; f.Exactness != "exact" || f.Value == nil || *f.Value != 54<<20 {
		t.Errorf("reserved_bytes.all.current = %+v, want exact 54 MiB", f)
	}
	if f := ms["reserved_bytes.all.peak"]; f.Exactness != "unknown" || f.Value != nil {
		t.Errorf("reserved_bytes.all.peak = %+v, want unknown and null", f)
	}
}

func TestSummaryTextAndSegments(t *testing.T) {
	file := sharedSnapshot(t, "torch2.11/cuda_graph/snapshot.pickle")
	out, stderr, err := runSnapview(t, "summary", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Device 0", "| private pool ", "| (1, 0) large ", "144.0 MiB reserved in 10 segments", "Trace: 64 entries"} {
		if !strings.Contains(out, w) {
			t.Errorf("summary lacks %q:\n%s", w, out)
		}
	}
	if stderr != "" {
		t.Errorf("unexpected stderr: %s", stderr)
	}
	out, _, err = runSnapview(t, "segments", file)
	if err != nil {
		t.Fatal(err)
	}
	// _memory_viz stats: segments: 10, total_reserved: 144.0MiB,
	// total_allocated: 110.0MiB, total_free: 34.0MiB.
	if w := "Device 0: 10 segments, 144.0 MiB reserved, largest free block"; !strings.Contains(out, w) {
		t.Errorf("segments lacks %q:\n%s", w, out)
	}
	out, _, err = runSnapview(t, "segments", "--json", "--device", "0", file)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Totals struct {
			ReservedBytes int64 `json:"reserved_bytes"`
		}
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil || js.Totals.ReservedBytes != 144<<20 {
		t.Errorf("segments --json: totals.reserved_bytes = %d (err %v), want %d", js.Totals.ReservedBytes, err, 144<<20)
	}
}

func TestDeviceFlagPick(t *testing.T) {
	var u *usageError
	if _, _, err := runSnapview(t, "segments", "--device", "3", sharedSnapshot(t, "public/p01-empty.pickle")); !errors.As(err, &u) {
		t.Errorf("--device 3 on a one-device empty file: error %v, want a usage error", err)
	}
	out, _, err := runSnapview(t, "summary", sharedSnapshot(t, "public/p01-empty.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "No segments") {
		t.Errorf("summary of an empty snapshot:\n%s", out)
	}
}
