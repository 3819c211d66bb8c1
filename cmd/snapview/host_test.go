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
