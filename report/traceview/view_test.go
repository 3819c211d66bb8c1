package traceview

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

func loadFixture(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func moment(t *testing.T, v string) *steps.Moment {
	t.Helper()
	m, err := steps.ParseMoment(v)
	if err != nil {
		t.Fatal(err)
	}
	return &m
}

// TestNewTraceHost: which traces `trace` lists of a file with pinned host
// memory (host_pinned.pickle: device 0's 2 entries and 26 host entries;
// host_memory.pickle: host entries only), and how a range resolves on the
// host trace.
func TestNewTraceHost(t *testing.T) {
	type got struct {
		dev      int
		host     bool
		from, to int
	}
	cases := []struct {
		name, file string
		o          TraceOptions
		want       []got
		err        string // a part of the *analysis.UsageError's message
	}{
		{"devices then host", "host_pinned.pickle", TraceOptions{}, []got{{0, false, 0, -1}, {-1, true, 0, -1}}, ""},
		{"a range names a device's moment", "host_pinned.pickle", TraceOptions{To: moment(t, "entry:1")}, []got{{0, false, 0, 1}}, ""},
		{"--device", "host_pinned.pickle", TraceOptions{Device: 0, DeviceSet: true}, []got{{0, false, 0, -1}}, ""},
		{"--host", "host_pinned.pickle", TraceOptions{Host: true}, []got{{-1, true, 0, -1}}, ""},
		{"--host --from entry --to end", "host_pinned.pickle", TraceOptions{Host: true, From: moment(t, "entry:20"), To: moment(t, "end")}, []got{{-1, true, 20, 25}}, ""},
		// host_pinned's host entries are 10 µs apart from 5,010 µs: 5,015 falls
		// after entry 0 and before entry 1.
		{"--host time:T", "host_pinned.pickle", TraceOptions{Host: true, From: moment(t, "time:5015"), To: moment(t, "time:5040")}, []got{{-1, true, 1, 3}}, ""},
		{"--host peak", "host_pinned.pickle", TraceOptions{Host: true, From: moment(t, "peak")}, nil, "peak, oom and step are moments of a device's replay"},
		{"--host past the end", "host_pinned.pickle", TraceOptions{Host: true, To: moment(t, "entry:26")}, nil, "the host trace has 26 trace entries (0 to 25)"},
		{"--host from after to", "host_pinned.pickle", TraceOptions{Host: true, From: moment(t, "entry:5"), To: moment(t, "entry:2")}, nil, "--from entry:5 comes after --to entry:2 in the host trace (entry 5 after entry 2)"},
		{"from after to", "host_pinned.pickle", TraceOptions{From: moment(t, "end"), To: moment(t, "entry:0")}, nil, "--from end comes after --to entry:0 on device 0 (entry 1 after entry 0)"},
		{"host only, with a range", "host_memory.pickle", TraceOptions{To: moment(t, "entry:3")}, []got{{-1, true, 0, 3}}, ""},
		{"--host without host entries", "newer-fields.pickle", TraceOptions{Host: true}, nil, "no host_traces entries"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.o.FromFlag, c.o.ToFlag = "--from", "--to"
			if c.o.From != nil {
				c.o.FromArg = c.o.From.String()
			}
			if c.o.To != nil {
				c.o.ToArg = c.o.To.String()
			}
			s := loadFixture(t, c.file)
			devs, err := TraceDevices(s, c.o)
			var tds []TraceDevice
			if err == nil {
				tds, err = NewTrace(analysis.New(s, analysis.Options{}), devs, c.o)
			}
			if c.err != "" {
				var ue *analysis.UsageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want a usage error with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var g []got
			for _, td := range tds {
				g = append(g, got{td.Device, td.Host, td.Filter.From, td.Filter.To})
			}
			if len(g) != len(c.want) {
				t.Fatalf("listed %+v, want %+v", g, c.want)
			}
			for i := range g {
				if g[i] != c.want[i] {
					t.Errorf("listed %+v, want %+v", g, c.want)
				}
			}
		})
	}
}

// TestWriteTraceHost: the host trace is listed under its own header in
// the device's columns, and in --json with device -1 and "host": true.
func TestWriteTraceHost(t *testing.T) {
	s := loadFixture(t, "host_pinned.pickle")
	tds := []TraceDevice{{Device: 0, Filter: TraceFilter{To: -1}}, {Device: -1, Host: true, Filter: TraceFilter{From: 20, To: -1}}}
	var b bytes.Buffer
	if err := WriteTrace(&b, s, tds); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"Device 0: 2 trace entries, 2 shown\n",
		"\nPinned host memory (the CUDA host allocator): 26 trace entries, 6 shown (entries 20 to 25)\n",
		"collate.py:58 collate"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	b.Reset()
	if err := WriteTraceJSON(&b, s, tds); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Entries []struct {
			Device int    `json:"device"`
			Host   bool   `json:"host"`
			Entry  int    `json:"entry"`
			Action string `json:"action"`
			Size   int64  `json:"size"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Entries) != 2+6 {
		t.Fatalf("%d entries, want 8", len(v.Entries))
	}
	if e := v.Entries[0]; e.Device != 0 || e.Host {
		t.Errorf("first entry %+v, want device 0's", e)
	}
	// Entry 25: h = allocate(900,000) takes C, recorded with the block's
	// size (testdata/gen/hostgen.py).
	if e := v.Entries[7]; e.Device != -1 || !e.Host || e.Entry != 25 || e.Action != "alloc" || e.Size != 1<<20 {
		t.Errorf("last entry %+v, want host entry 25, an alloc of 1 MiB", e)
	}
}
