package monitor

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/snapview/snapview/analyze/stats"
)

// seeds adds the bundled logs and a few cut or odd lines to f.
func seeds(f *testing.F, files ...string) {
	for _, name := range files {
		b, err := os.ReadFile("../../testdata/snapshots/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	f.Add([]byte(""))
	f.Add([]byte("\n,\n\"\n"))
}

// FuzzParseSMI: any input gives samples or an error naming a line, never
// a panic; every sample has its line.
func FuzzParseSMI(f *testing.F) {
	seeds(f, "monitor_small.smi.csv", "monitor_small.noheader.csv", "monitor_train.smi.csv")
	f.Fuzz(func(t *testing.T, b []byte) {
		Sniff(b)
		l, err := ParseSMI(bytes.NewReader(b), time.UTC)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.HasPrefix(err.Error(), "no nvidia-smi rows") {
				t.Errorf("error without a line number: %v", err)
			}
			return
		}
		for _, s := range l.Samples {
			if s.Line < 1 {
				t.Errorf("sample without a line: %+v", s)
			}
		}
		for _, g := range SummarizeSMI(l) {
			if g.Min > g.Median || g.Median > g.Max {
				t.Errorf("GPU %d: min %d, median %d, max %d", g.GPU, g.Min, g.Median, g.Max)
			}
		}
	})
}

// FuzzParseStatsLog: any input gives records or an error, never a panic.
func FuzzParseStatsLog(f *testing.F) {
	// Three records: the fuzzer mutates small inputs much faster.
	b, err := os.ReadFile("../../testdata/snapshots/monitor_train.stats.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	f.Add(bytes.Join(lines[:3], nil))
	f.Add(bytes.Join(lines[:2], nil)[:7000])
	f.Add([]byte(`{"step": 1, "time": 2, "memory_stats": {}}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		Sniff(b)
		l, err := ParseStatsLog(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, d := range AnalyzeSteps(l) {
			if d.Allocated.Climbing && (d.Allocated.Start < 1 || d.Allocated.Rise <= 0) {
				t.Errorf("climb %+v", d.Allocated)
			}
		}
	})
}

// FuzzParseStatsJSON: any input to the memory_stats() dump reader (the
// flat dict, {"device": d, "memory_stats": {...}}, or a dict of devices)
// gives figures or an error, never a panic; ReadLog reads it within its
// bounds first, as the commands do.
func FuzzParseStatsJSON(f *testing.F) {
	for _, name := range []string{"monitor_train.stats.json", "ddp_rank1.stats.json"} {
		b, err := os.ReadFile("../../testdata/snapshots/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte(`{"device": 1, "memory_stats": {"num_ooms": 1}}`))
	f.Add([]byte(`{"0": {}, "1": {"num_ooms": 1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		Sniff(b)
		b, err := ReadLog(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("ReadLog of %d bytes: %v", len(b), err)
		}
		stats.StatsJSONNamesDevice(b)
		st, err := stats.ParseStatsJSON(b, 0)
		if err != nil {
			return
		}
		for _, s := range st {
			if s == nil {
				t.Fatal("nil stats without an error")
			}
		}
	})
}
