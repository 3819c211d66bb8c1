package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
// views of state and leaks, in text and in their --json), with the figures
// derived by hand in host_pinned.meta.json (peak 6,291,584 B pinned in 4
// blocks, 6,291,456 B handed out in 3 requests; num_host_alloc 5,
// num_host_free 1),
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
		for _, want := range []string{"6.0 MiB pinned in 4 blocks, 6.0 MiB handed out in 3 requests (exact)",
			"5 blocks pinned (num_host_alloc), 1 unpinned", "4.0 MiB in 1 block at /x/loader.py:41 pin_batch"} {
			if !strings.Contains(strings.Join(strings.Fields(host), " "), want) {
				t.Errorf("%s: no %q in:\n%s", cmd, want, host)
			}
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
		if v.Host == nil {
			t.Fatalf("%s --json: no host:\n%s", cmd, out)
		}
		r := v.Host.Replay
		if r.Exactness != "exact" || r.AllocatedBytes.Current != 6291584 || r.AllocatedBytes.Peak == nil || *r.AllocatedBytes.Peak != 6291584 ||
			r.ActiveBytes.Current != 5242880 || r.ActiveBytes.Peak == nil || *r.ActiveBytes.Peak != 6291456 || r.NumHostAlloc == nil || *r.NumHostAlloc != 5 {
			t.Errorf("%s --json host replay = %+v", cmd, r)
		}
	}
}

// TestHostOnlyDeviceViews: on a file of pinned host memory only, state,
// leaks, explain and segments show the host memory (its replayed peak and
// live pinned memory by stack) instead of saying recording was off (trace
// lists its host trace: TestHostTrace).
func TestHostOnlyDeviceViews(t *testing.T) {
	const file = "../../testdata/snapshots/host_memory.pickle"
	for _, cmd := range []string{"state", "leaks", "explain", "segments"} {
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
		if strings.Contains(out, "recording was off") || strings.Contains(out, "without history") {
			t.Errorf("%s: says recording was off:\n%s", cmd, out)
		}
	}
}

// TestHostOnlyWhatif: whatif on a file of pinned host memory only is a
// usage error that says what the file holds, not a hint to record a
// trace it already has.
func TestHostOnlyWhatif(t *testing.T) {
	_, _, err := runSnapview(t, "whatif", "../../testdata/snapshots/host_memory.pickle")
	if code := exitCode(err); code != 2 || !strings.Contains(fmt.Sprint(err), "pinned host memory only") {
		t.Errorf("whatif on host_memory.pickle: exit %d, error %v; want 2 and the file's host memory named", code, err)
	}
}

// TestHostAgreesAcrossViews: state, leaks and explain --json give the
// same host object as summary --json and info --json, byte for byte (one
// computation, analysis.File.Host), and the text of state, leaks and
// explain the same host section as summary, on a file with device and host memory
// (host_pinned.pickle) and on one with host memory only
// (host_memory.pickle). Files whose host keys hold nothing
// (newer-fields.pickle, annotate.pickle: PyTorch writes them empty when
// host recording is off) have no host object in any JSON view and no host
// section in the text of state and leaks. The
// figures checked are host_pinned.meta.json's, derived by hand.
func TestHostAgreesAcrossViews(t *testing.T) {
	type meta struct {
		Host struct {
			PeakReservedBytes int64 `json:"peak_reserved_bytes"`
			PeakActiveBytes   int64 `json:"peak_active_bytes"`
			NumHostAlloc      int64 `json:"num_host_alloc"`
			NumHostFree       int64 `json:"num_host_free"`
			LiveByStack       []struct {
				Bytes  int64 `json:"bytes"`
				Blocks int   `json:"blocks"`
			} `json:"live_by_stack"`
		} `json:"host"`
	}
	for _, name := range []string{"host_pinned", "host_memory", "newer-fields", "annotate"} {
		file := "../../testdata/snapshots/" + name + ".pickle"
		empty := name == "newer-fields" || name == "annotate"
		hostOf := func(cmd string) string {
			t.Helper()
			out, errOut, err := runSnapview(t, cmd, "--json", file)
			if err != nil {
				t.Fatalf("%s %s --json: %v\n%s", cmd, name, err, errOut)
			}
			var v struct {
				Host json.RawMessage `json:"host"`
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("%s %s --json: %v", cmd, name, err)
			}
			if len(v.Host) == 0 || string(v.Host) == "null" {
				if empty {
					return "null"
				}
				t.Fatalf("%s %s --json: no host object:\n%s", cmd, name, out)
			}
			var b bytes.Buffer
			if err := json.Compact(&b, v.Host); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		want := hostOf("summary")
		if empty && want != "null" {
			t.Errorf("%s: summary --json has a host object for empty host keys: %s", name, want)
		}
		for _, cmd := range []string{"info", "state", "leaks", "explain"} {
			if got := hostOf(cmd); got != want {
				t.Errorf("%s: %s --json host differs from summary's:\n got %s\nwant %s", name, cmd, got, want)
			}
		}
		sectionOf := func(cmd string) string {
			t.Helper()
			out, errOut, err := runSnapview(t, cmd, file)
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", cmd, name, err, errOut)
			}
			k := strings.Index(out, "Pinned host memory")
			if k < 0 {
				t.Fatalf("%s %s: no host section:\n%s", cmd, name, out)
			}
			sec := out[k:]
			if e := strings.Index(sec, "\n\n"); e >= 0 {
				sec = sec[:e+1]
			}
			return sec
		}
		if empty {
			for _, cmd := range []string{"state", "leaks"} {
				if out, _, _ := runSnapview(t, cmd, file); strings.Contains(out, "Pinned host memory") {
					t.Errorf("%s: %s shows empty host keys:\n%s", name, cmd, out)
				}
			}
			continue
		}
		wantText := sectionOf("summary")
		for _, cmd := range []string{"state", "leaks", "explain"} {
			if got := sectionOf(cmd); got != wantText {
				t.Errorf("%s: %s's host section differs from summary's:\n%s\nwant\n%s", name, cmd, got, wantText)
			}
		}
		if name != "host_pinned" {
			continue
		}
		raw, err := os.ReadFile("../../testdata/snapshots/host_pinned.meta.json")
		if err != nil {
			t.Fatal(err)
		}
		var m meta
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var h struct {
			Replay struct {
				AllocatedBytes struct{ Peak int64 } `json:"allocated_bytes"`
				ActiveBytes    struct{ Peak int64 } `json:"active_bytes"`
				NumHostAlloc   int64                `json:"num_host_alloc"`
				NumHostFree    int64                `json:"num_host_free"`
			} `json:"replay"`
			LiveByStack []struct {
				Bytes  int64 `json:"bytes"`
				Blocks int   `json:"blocks"`
			} `json:"live_by_stack"`
		}
		if err := json.Unmarshal([]byte(want), &h); err != nil {
			t.Fatal(err)
		}
		r, mh := h.Replay, m.Host
		if r.AllocatedBytes.Peak != mh.PeakReservedBytes || r.ActiveBytes.Peak != mh.PeakActiveBytes ||
			r.NumHostAlloc != mh.NumHostAlloc || r.NumHostFree != mh.NumHostFree || len(h.LiveByStack) != len(mh.LiveByStack) {
			t.Fatalf("host replay %+v, live %+v; meta.json says %+v", r, h.LiveByStack, mh)
		}
		for i, l := range h.LiveByStack {
			if l.Bytes != mh.LiveByStack[i].Bytes || l.Blocks != mh.LiveByStack[i].Blocks {
				t.Errorf("live_by_stack[%d] = %+v, meta.json says %+v", i, l, mh.LiveByStack[i])
			}
		}
	}
}

// TestHostReport: `snapview report` on a file of pinned host memory only
// makes a page of its host section, with no empty device section beside
// it; on a file with both, the host section follows the device's.
func TestHostReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		devices int
	}{{"host_memory", 0}, {"host_pinned", 1}} {
		out := filepath.Join(t.TempDir(), tc.name+".html")
		if _, errOut, err := runSnapview(t, "report", "-o", out, "../../testdata/snapshots/"+tc.name+".pickle"); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, errOut)
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		page := string(raw)
		if n := strings.Count(page, `<section class="device host" id="host">`); n != 1 {
			t.Errorf("%s: %d host sections, want 1", tc.name, n)
		}
		if n := strings.Count(page, `<section class="device" id=`); n != tc.devices {
			t.Errorf("%s: %d device sections, want %d", tc.name, n, tc.devices)
		}
	}
}

// TestHostTrace: trace lists the pinned host allocator's entries
// (host_traces) after the devices' when no range is given, alone with
// --host or on a file of host memory only, in text and --json; flags that
// cannot apply are usage errors (exit 2).
func TestHostTrace(t *testing.T) {
	const pinned = "../../testdata/snapshots/host_pinned.pickle"
	const only = "../../testdata/snapshots/host_memory.pickle"
	for _, c := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{pinned}, []string{"Device 0: 2 trace entries, 2 shown", "Pinned host memory (the CUDA host allocator): 26 trace entries, 26 shown"}, nil},
		{[]string{"--to", "entry:1", pinned}, []string{"Device 0: 2 trace entries, 2 shown\n"}, []string{"Pinned host memory"}},
		{[]string{"--host", "--from", "entry:24", pinned}, []string{"26 trace entries, 2 shown (entries 24 to 25)", "free_completed", "collate.py:58 collate"}, []string{"Device 0"}},
		{[]string{only}, []string{"Pinned host memory (the CUDA host allocator): 8 trace entries, 8 shown", "loader.py:88 pin_memory"}, []string{"without history"}},
		{[]string{"--json", only}, []string{`"device":-1,"host":true,"entry":7,"time_us":2007,"action":"alloc","size":4096`}, nil},
	} {
		out, errOut, err := runSnapview(t, append([]string{"trace"}, c.args...)...)
		if err != nil {
			t.Fatalf("trace %v: %v\n%s", c.args, err, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("trace %v: no %q in:\n%s", c.args, w, out)
			}
		}
		for _, w := range c.not {
			if strings.Contains(out, w) {
				t.Errorf("trace %v: %q in:\n%s", c.args, w, out)
			}
		}
	}
	for _, args := range [][]string{
		{"--host", "--device", "0", pinned},
		{"--host", "--format", "memviz", pinned},
		{"--host", "--from", "peak", pinned},
		{"--host", "../../testdata/snapshots/newer-fields.pickle"},
	} {
		_, _, err := runSnapview(t, append([]string{"trace"}, args...)...)
		if code := exitCode(err); code != 2 {
			t.Errorf("trace %v: exit %d (%v), want 2", args, code, err)
		}
	}
}
