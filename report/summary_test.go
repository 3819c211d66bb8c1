package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

func TestWriteSummaryGolden(t *testing.T) {
	s := syntheticSnapshot()
	s.Format = snapshot.Format{Encoding: "pickle", PickleProtocol: 4, Bytes: 12345}
	s.Traces[0] = []snapshot.TraceEntry{
		{Action: snapshot.ActionFreeCompleted, Addr: 0x7f00000000f0, Flags: snapshot.FlagTime, TimeUS: 1_000_000},
		{Action: snapshot.ActionAlloc, Addr: 0x7f0000000000, Size: 400, Flags: snapshot.FlagTime, TimeUS: 2_500_000},
		{Action: snapshot.ActionOOM, Addr: 1 << 30, Size: 1 << 40, Flags: snapshot.FlagTime, TimeUS: 3_000_000},
	}
	replayed := func(dev int, history stats.Exactness) *stats.MemoryStats {
		st := stats.CurrentStats(s, dev)
		st.AllocatedBytes[stats.PoolAll].Peak = 100 << 20
		st.ReservedBytes[stats.PoolAll].Peak = 130 << 20
		st.NumOOMs = 1
		st.Known.History, st.Known.NumOOMs = history, history
		if history == stats.LowerBound {
			st.Known.Why, st.Known.Seeded = "the trace misses the start of the run", true
		}
		return st
	}
	tests := []struct {
		name  string
		stats []*stats.MemoryStats
	}{
		{"current", []*stats.MemoryStats{stats.CurrentStats(s, 0), stats.CurrentStats(s, 1)}},
		{"replayed", []*stats.MemoryStats{replayed(0, stats.LowerBound), replayed(1, stats.Exact)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := NewSummary("synthetic.pickle", analysis.New(s, analysis.Options{}), tt.stats)
			var text, js bytes.Buffer
			if err := WriteSummaryText(&text, sum); err != nil {
				t.Fatal(err)
			}
			if err := WriteSummaryJSON(&js, sum); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", "synthetic.summary."+tt.name+".txt"), text.String())
			checkGolden(t, filepath.Join("testdata", "synthetic.summary."+tt.name+".json"), js.String())

			// Unknown figures are null, known ones carry their value.
			var out struct {
				Devices []struct {
					MemoryStats map[string]struct {
						Value     *int64
						Exactness string
					} `json:"memory_stats"`
				}
			}
			if err := json.Unmarshal(js.Bytes(), &out); err != nil {
				t.Fatal(err)
			}
			for i, d := range out.Devices {
				if len(d.MemoryStats) != 122 {
					t.Errorf("device %d: %d memory_stats figures, want 122", i, len(d.MemoryStats))
				}
				for k, f := range d.MemoryStats {
					if (f.Value == nil) != (f.Exactness == "unknown") {
						t.Errorf("device %d: %s: value %v with exactness %q", i, k, f.Value, f.Exactness)
					}
				}
				if f := d.MemoryStats["allocated_bytes.all.current"]; f.Exactness != "exact" {
					t.Errorf("device %d: allocated_bytes.all.current is %q, want exact", i, f.Exactness)
				}
			}
		})
	}
}

func TestWriteSummaryEmpty(t *testing.T) {
	s := &snapshot.Snapshot{HasDeviceTraces: true, Traces: [][]snapshot.TraceEntry{{}}}
	sum := NewSummary("empty.pickle", analysis.New(s, analysis.Options{}), []*stats.MemoryStats{stats.CurrentStats(s, 0)})
	var text, js bytes.Buffer
	if err := WriteSummaryText(&text, sum); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummaryJSON(&js, sum); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "empty.summary.txt"), text.String())
	if !bytes.Contains(js.Bytes(), []byte(`"pools": []`)) {
		t.Errorf("JSON of an empty snapshot lacks an empty pools list:\n%s", js.String())
	}
}

// TestSummaryCoverageAsInfo checks that summary tells each trace's
// coverage as `snapview info` does (info.Inspect), on every shared
// snapshot, from stats replayed as the CLI replays them.
func TestSummaryCoverageAsInfo(t *testing.T) {
	root := sharedSnapshots(t)
	var files []string
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/snapshot.pickle", 17}, {"public/*.pickle", 34}, {"torch2.11-probe/*.pickle", 13}} {
		files = append(files, corpus.Match(t, root, pat.glob, pat.min)...)
	}
	loaded := 0
	defer func() { corpus.AtLeast(t, "snapshots loaded", loaded, 64) }()
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			continue
		}
		loaded++
		in := info.Inspect(s, nil, nil)
		var all []*stats.MemoryStats
		for _, d := range s.Devices() {
			st := stats.CurrentStats(s, d)
			if d < len(s.Traces) && len(s.Traces[d]) > 0 {
				if r, err := replay.Run(s, d, replay.Options{Mode: replay.StatsOnly}); err == nil && r.Check.Equal {
					st.Known.History = r.Stats.Known.History
				}
			}
			all = append(all, st)
		}
		sum := NewSummary(f, analysis.New(s, analysis.Options{}), all)
		for _, d := range sum.Devices {
			for _, want := range in.Devices {
				if want.Device != d.Device {
					continue
				}
				if d.Info == nil || d.Info.Coverage != want.Coverage {
					t.Errorf("%s device %d: summary coverage %+v, info says %s", f, d.Device, d.Info, want.Coverage)
				}
			}
		}
		if !slices.Equal(sum.IdleDevices, in.IdleDevices) {
			t.Errorf("%s: idle devices %v, info says %v", f, sum.IdleDevices, in.IdleDevices)
		}
	}
}

// TestSummaryStateOnlyAndEmpty checks two field reports: p12 (enabled=
// 'state' in torch 2.0) is "state only" as info says, not a late start;
// p02 (4 devices, nothing on any) says so and claims no missing stacks.
func TestSummaryStateOnlyAndEmpty(t *testing.T) {
	root := sharedSnapshots(t)
	text := func(name string) string {
		s, err := snapshot.Load(filepath.Join(root, "public", name))
		if err != nil {
			t.Fatal(err)
		}
		st := stats.CurrentStats(s, 0)
		if len(s.Traces) > 0 && len(s.Traces[0]) > 0 {
			r, err := replay.Run(s, 0, replay.Options{Mode: replay.StatsOnly})
			if err != nil {
				t.Fatal(err)
			}
			st.Known.History = r.Stats.Known.History
		}
		var b bytes.Buffer
		if err := WriteSummaryText(&b, NewSummary(name, analysis.New(s, analysis.Options{}), []*stats.MemoryStats{st})); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	p12 := text("p12-torch2.0-history-layout-oom.pickle")
	if !strings.Contains(p12, "Trace: 1 entry; state only") || strings.Contains(p12, "started late") || strings.Contains(p12, "wrapped") {
		t.Errorf("p12:\n%s", p12)
	}
	p02 := text("p02-empty-4dev.pickle")
	if !strings.Contains(p02, "4 devices recorded, nothing on any of them") || !strings.Contains(p02, "nothing on this device") ||
		strings.Contains(p02, "Stacks:") {
		t.Errorf("p02:\n%s", p02)
	}
}
