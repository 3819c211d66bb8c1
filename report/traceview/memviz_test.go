package traceview

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// TestMemvizTraceMatches: WriteMemvizTrace prints what `_memory_viz trace`
// printed, byte for byte, in every torch 2.11 folder that has its output;
// where _memory_viz failed (no device_traces) it returns ErrNoDeviceTraces.
func TestMemvizTraceMatches(t *testing.T) {
	dirs := corpus.Glob(t, "torch2.11/*", 10)
	checked := 0
	for _, dir := range dirs {
		want, err := os.ReadFile(filepath.Join(dir, "memviz_trace.txt"))
		if err != nil {
			continue
		}
		s, err := snapshot.Load(filepath.Join(dir, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		err = WriteMemvizTrace(&got, s)
		if bytes.Contains(want, []byte("KeyError: 'device_traces'")) {
			if !errors.Is(err, ErrNoDeviceTraces) {
				t.Errorf("%s: err = %v, want ErrNoDeviceTraces", dir, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		checked++
		if !bytes.Equal(got.Bytes(), want) {
			g, w := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
			for i := range max(len(g), len(w)) {
				var a, b string
				if i < len(g) {
					a = g[i]
				}
				if i < len(w) {
					b = w[i]
				}
				if a != b {
					t.Errorf("%s: line %d:\ngot:  %.300s\nwant: %.300s", filepath.Base(dir), i+1, a, b)
					break
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no memviz_trace.txt compared")
	}
}

func TestAppendPyBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{0, "0.0B"}, {4, "4.0B"}, {1023, "1023.0B"}, {1024, "1.0KiB"}, {-3891, "-3.8KiB"},
		{16 << 20, "16.0MiB"}, {1<<20 - 1, "1024.0KiB"},
	} {
		if got := string(appendPyBytes(nil, c.n)); got != c.want {
			t.Errorf("appendPyBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

// TestMemvizTraceQuirks: on a made-up two-device snapshot, what
// _memory_viz trace does that the shared recordings do not show: "TOTAL
// MEM" without a newline before the next device's header, an alloc outside
// every segment ("MEM" and its absolute address), a free of an address
// never allocated (the address itself), an entry of another action as the
// dict's repr (a string holding a quote in double quotes).
func TestMemvizTraceQuirks(t *testing.T) {
	s := &snapshot.Snapshot{
		HasDeviceTraces: true,
		Frames:          []snapshot.Frame{{Filename: "/x/it's.py", Line: 3, Name: "f"}},
		Stacks:          [][]snapshot.FrameID{{}, {0}},
		Strings:         []string{""},
		Traces: [][]snapshot.TraceEntry{
			{
				{Action: snapshot.ActionAlloc, Addr: 4096, Size: 512},
				{Action: snapshot.ActionFreeCompleted, Addr: 8192, Size: 100},
			},
			{
				{Action: snapshot.ActionSegmentMap, Addr: 1 << 20, Size: 2 << 20, TimeUS: 7, Stack: 1,
					Flags: snapshot.FlagAddr | snapshot.FlagTime | snapshot.FlagFrames},
			},
		},
	}
	var b bytes.Buffer
	if err := WriteMemvizTrace(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "Device 0 ----------------\n2 entries\n" +
		"a = MEM[4096:512.0B]\n" +
		"# free completed for 8192 100.0B\n" +
		"TOTAL MEM: -99.0BDevice 1 ----------------\n1 entries\n" +
		"{'action': 'segment_map', 'addr': 1048576, 'size': 2097152, 'stream': 0, 'time_us': 7, " +
		"'frames': [{'name': 'f', 'filename': \"/x/it's.py\", 'line': 3}]}\n" +
		"TOTAL MEM: 0.0B\n"
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
