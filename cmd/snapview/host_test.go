package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHostMemory: a file with pinned host memory only (host_segments,
// host_traces; record_cuda=False) shows it in its own section of info and
// summary, and gives no advice to record history.
func TestHostMemory(t *testing.T) {
	const file = "../../testdata/snapshots/host_memory.pickle"
	for _, args := range [][]string{{"info", file}, {"summary", file}} {
		out, errOut, err := runSnapview(t, args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, errOut)
		}
		for _, want := range []string{"Pinned host memory", "3 segments, 2.0 MiB pinned", "Trace: 8 entries"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: no %q in:\n%s", args[0], want, out)
			}
		}
		for _, bad := range []string{"Call torch.cuda.memory._record_memory_history", "Record with", "enabled=off", "record one"} {
			if strings.Contains(out+errOut, bad) {
				t.Errorf("%s: says %q though host history exists:\n%s%s", args[0], bad, out, errOut)
			}
		}
	}
	out, _, err := runSnapview(t, "summary", "--json", file)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Host *struct {
			Segments      int   `json:"segments"`
			ReservedBytes int64 `json:"reserved_bytes"`
			TraceEntries  int   `json:"trace_entries"`
		} `json:"host"`
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Host == nil || sum.Host.Segments != 3 || sum.Host.ReservedBytes != 2<<20+4096 || sum.Host.TraceEntries != 8 {
		t.Errorf("summary --json host = %+v, want 3 segments, %d bytes, 8 entries", sum.Host, 2<<20+4096)
	}
}

// TestHostReplayViews: host_pinned.pickle (testdata/gen/hostgen.py, a
// 2.14-style file with device and host memory) shows its host trace's
// replay in summary and info, text and --json alike (and after the device
// views of state and leaks, in text), with the figures
// derived by hand in host_pinned.meta.json (peak 6,291,456 B pinned and
// handed out, 3 blocks, 3 requests; num_host_alloc 4, num_host_free 1),
// marked exact and apart from the device's figures.
func TestHostReplayViews(t *testing.T) {
	const file = "../../testdata/snapshots/host_pinned.pickle"
	for _, cmd := range []string{"info", "summary", "state", "leaks"} {
		out, errOut, err := runSnapview(t, cmd, file)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, errOut)
		}
		k := strings.Index(out, "Pinned host memory")
		if k < 0 {
			t.Fatalf("%s: no pinned host memory in:\n%s", cmd, out)
		}
		host := out[k:]
		for _, want := range []string{"6.0 MiB pinned in 3 blocks, 6.0 MiB handed out in 3 requests (exact)",
			"4 blocks pinned (num_host_alloc), 1 unpinned", "4.0 MiB in 1 block at /x/loader.py:41 pin_batch"} {
			if !strings.Contains(strings.Join(strings.Fields(host), " "), want) {
				t.Errorf("%s: no %q in:\n%s", cmd, want, host)
			}
		}
		if cmd == "state" || cmd == "leaks" {
			continue // their JSON is per device
		}
		out, _, err = runSnapview(t, cmd, "--json", file)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			Host *struct {
				Replay struct {
					Exactness      string `json:"exactness"`
					AllocatedBytes struct {
						Current int64  `json:"current"`
						Peak    *int64 `json:"peak"`
					} `json:"allocated_bytes"`
					ActiveBytes struct {
						Current int64  `json:"current"`
						Peak    *int64 `json:"peak"`
					} `json:"active_bytes"`
					NumHostAlloc *int64 `json:"num_host_alloc"`
				} `json:"replay"`
			} `json:"host"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		r := v.Host.Replay
		if r.Exactness != "exact" || r.AllocatedBytes.Current != 5243008 || r.AllocatedBytes.Peak == nil || *r.AllocatedBytes.Peak != 6291456 ||
			r.ActiveBytes.Current != 5242880 || r.ActiveBytes.Peak == nil || *r.ActiveBytes.Peak != 6291456 || r.NumHostAlloc == nil || *r.NumHostAlloc != 4 {
			t.Errorf("%s --json host replay = %+v", cmd, r)
		}
	}
}

// TestHostOnlyDeviceViews: on a file of pinned host memory only, state,
// leaks and explain show the host memory (its replayed peak and live
// pinned memory by stack) instead of saying recording was off.
func TestHostOnlyDeviceViews(t *testing.T) {
	const file = "../../testdata/snapshots/host_memory.pickle"
	for _, cmd := range []string{"state", "leaks", "explain"} {
		out, errOut, err := runSnapview(t, cmd, file)
		if err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, errOut)
		}
		flat := strings.Join(strings.Fields(out), " ")
		for _, want := range []string{"pinned host memory only", "2.0 MiB pinned in 3 blocks, 2.0 MiB handed out in 2 requests (exact)",
			"Handed out at the end, by stack: 1.0 MiB in 2 blocks at /x/loader.py:88 pin_memory"} {
			if !strings.Contains(flat, want) {
				t.Errorf("%s: no %q in:\n%s", cmd, want, out)
			}
		}
		if strings.Contains(out, "recording was off") {
			t.Errorf("%s: says recording was off:\n%s", cmd, out)
		}
	}
}
