package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/internal/golden"
	"github.com/snapview/snapview/snapshot"
)

var update = flag.Bool("update", false, "update golden files under testdata/")

// sharedSnapshots returns the shared corpus's snapshots directory (see
// internal/corpus), or ends the test when the corpus is absent.
func sharedSnapshots(t testing.TB) string { return corpus.Dir(t) }

func TestFormatTorchSize(t *testing.T) {
	// Expected strings printed by torch/cuda/memory.py _format_size
	// (PyTorch 2.11) for the same arguments.
	tests := []struct {
		sz, pref int64
		want     string
	}{
		{0, 0, "     0 B  "},
		{1, 1, "     1 B  "},
		{786431, 786431, "786431 B  "},
		{786432, 786432, "   768 KiB"},
		{1023, 786432, "     0 KiB"},
		{194259968, 194259968, "189707 KiB"},
		{1048576, 1048576, "  1024 KiB"},
		{805306367, 805306367, "786431 KiB"},
		{805306368, 805306368, "   768 MiB"},
		{1 << 62, 1 << 62, "  4096 PiB"},
		{1<<63 - 1, 1<<63 - 1, "  8191 PiB"},
		{5, 1<<63 - 1, "     0 PiB"},
		{1536, 0, "  1536 B  "},
		{-1, -1, "    -1 B  "},
		{-1025, 786432, "    -2 KiB"},
		{1048576, 1 << 40, "     0 GiB"},
	}
	for _, tt := range tests {
		if got := FormatTorchSize(tt.sz, tt.pref); got != tt.want {
			t.Errorf("FormatTorchSize(%d, %d) = %q, want %q", tt.sz, tt.pref, got, tt.want)
		}
	}
}

func TestFormatTorchCount(t *testing.T) {
	// Expected strings printed by torch/cuda/memory.py _format_count.
	tests := []struct {
		cnt, pref int64
		want      string
	}{
		{0, 0, "      0   "},
		{7, 7, "      7   "},
		{749999, 749999, " 749999   "},
		{750000, 750000, "    750 K "},
		{999, 750000, "      0 K "},
		{1234567, 1234567, "   1234 K "},
		{749999999, 749999999, " 749999 K "},
		{750000000, 750000000, "    750 M "},
		{1<<63 - 1, 1<<63 - 1, "9223372036854 M "},
		{-1, -1, "     -1   "},
		{-1001, 750000, "     -2 K "},
		{12, 750000000, "      0 M "},
	}
	for _, tt := range tests {
		if got := FormatTorchCount(tt.cnt, tt.pref); got != tt.want {
			t.Errorf("FormatTorchCount(%d, %d) = %q, want %q", tt.cnt, tt.pref, got, tt.want)
		}
	}
}

// torchCase is one memory_summary() text captured next to the
// memory_stats() it was printed from.
type torchCase struct {
	name        string
	stats       *stats.MemoryStats
	want        string
	abbreviated bool
}

// torchCases collects every summary in the shared corpus with its stats:
// torch2.11/*/summary.txt, two_devices' per-device summaries,
// big/*/summary.txt and both summaries of each torch2.11-probe/*.extra.json.
func torchCases(t *testing.T) []torchCase {
	t.Helper()
	root := sharedSnapshots(t)
	var cases []torchCase
	load := func(statsPath string) []*stats.MemoryStats {
		data, err := os.ReadFile(statsPath)
		if err != nil {
			t.Fatal(err)
		}
		st, err := stats.ParseStatsJSON(data, 0)
		if err != nil {
			t.Fatalf("%s: %v", statsPath, err)
		}
		return st
	}
	read := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/summary.txt", 16}, {"big/*/summary.txt", 1}, {"whatif/*/*/summary.txt", 15}} {
		for _, f := range corpus.Match(t, root, pat.glob, pat.min) {
			dir := filepath.Dir(f)
			cases = append(cases, torchCase{
				name:  filepath.Base(dir),
				stats: load(filepath.Join(dir, "stats.json"))[0],
				want:  read(f),
			})
		}
	}
	for _, f := range corpus.Match(t, root, "torch2.11/*/snapshot.summary.dev*.txt", 2) {
		dir := filepath.Dir(f)
		all := load(filepath.Join(dir, "snapshot.stats.json"))
		dev := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "snapshot.summary.dev"), ".txt")
		var st *stats.MemoryStats
		for _, s := range all {
			if dev == strconv.Itoa(s.Device) {
				st = s
			}
		}
		if st == nil {
			t.Fatalf("%s: no stats for device %s", f, dev)
		}
		cases = append(cases, torchCase{name: filepath.Base(dir) + "/dev" + dev, stats: st, want: read(f)})
	}
	for _, f := range corpus.Match(t, root, "torch2.11-probe/*.extra.json", 13) {
		var extra struct {
			Summary       string `json:"memory_summary"`
			SummaryAbbrev string `json:"memory_summary_abbrev"`
		}
		if err := json.Unmarshal([]byte(read(f)), &extra); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		st := load(f)[0]
		name := "probe/" + strings.TrimSuffix(filepath.Base(f), ".extra.json")
		cases = append(cases,
			torchCase{name: name, stats: st, want: extra.Summary},
			torchCase{name: name + "/abbreviated", stats: st, want: extra.SummaryAbbrev, abbreviated: true})
	}
	return cases
}

// TestWriteTorchSummaryCorpus requires byte equality with every
// memory_summary() text in the shared corpus, built from the memory_stats()
// captured at the same moment.
func TestWriteTorchSummaryCorpus(t *testing.T) {
	cases := torchCases(t)
	var full, abbrev int
	for _, c := range cases {
		var buf bytes.Buffer
		if err := writeTorchSummary(&buf, c.stats, c.abbreviated); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.want, buf.String()); diff != "" {
			t.Errorf("%s: summary mismatch (-torch +ours):\n%s", c.name, diff)
			continue
		}
		if c.abbreviated {
			abbrev++
		} else {
			full++
		}
	}
	t.Logf("%d full and %d abbreviated memory_summary() texts match byte for byte", full, abbrev)
	if full < 47 {
		t.Errorf("only %d full summaries checked; the corpus has 47 (torch2.11, big and the 15 whatif runs)", full)
	}
}

// markedStats is a MemoryStats with recognisable figures, for the golden
// tests of the '?' and '+' markers.
func markedStats(known stats.Known) *stats.MemoryStats {
	m := map[string]int64{}
	for i, f := range (&stats.MemoryStats{}).Figures() {
		m[f.Key] = int64(i+1) * 1_234_567
	}
	st, err := stats.StatsFromFlat(1, m)
	if err != nil {
		panic(err)
	}
	st.Known = known
	return st
}

func TestWriteTorchSummaryMarkers(t *testing.T) {
	tests := []struct {
		name   string
		known  stats.Known
		golden string
	}{
		{"exact", stats.Known{Current: stats.Exact, History: stats.Exact, NumOOMs: stats.Exact, NumAllocRetries: stats.Exact, Requested: stats.Exact}, "torch.exact.txt"},
		{"current only", stats.Known{Current: stats.Exact, Requested: stats.Exact}, "torch.current_only.txt"},
		{"lower bounds", stats.Known{Current: stats.Exact, History: stats.LowerBound, NumOOMs: stats.LowerBound, Requested: stats.Exact}, "torch.lower_bound.txt"},
		// The requested sizes unknown: every Requested memory cell is "?",
		// every other cell as in torch.exact.txt.
		{"requested unknown", stats.Known{Current: stats.Exact, History: stats.Exact, NumOOMs: stats.Exact, NumAllocRetries: stats.Exact,
			Requested: stats.Unknown, RequestedWhy: "1 active block requests more bytes than it holds"}, "torch.requested_unknown.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTorchSummary(&buf, markedStats(tt.known)); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			// Markers never move a column: every line keeps torch's width.
			for i, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if n := len(line); n != torchWidth+2 {
					t.Errorf("line %d is %d bytes, want %d: %q", i+1, n, torchWidth+2, line)
				}
			}
			checkGolden(t, filepath.Join("testdata", tt.golden), got)
		})
	}
}

// checkGolden compares got with the golden file at path (with -update,
// writes it).
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	golden.Check(t, path, got, *update)
}

// curUsageColumn returns the label and Cur Usage cell of every metric row
// of a memory_summary() text.
func curUsageColumn(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, "|")
		// "", label, cur, peak, alloc, freed, ""
		if len(cells) != 7 || strings.TrimSpace(cells[1]) == "Metric" {
			continue
		}
		out = append(out, cells[1]+"|"+cells[2])
	}
	return out
}

// TestTorchCurUsageFromSnapshot decodes each real snapshot that has a
// memory_summary() next to it, derives the Cur Usage column from its
// segments alone (stats.CurrentStats) and requires every cell of that
// column to equal torch's.
func TestTorchCurUsageFromSnapshot(t *testing.T) {
	root := sharedSnapshots(t)
	type tcase struct {
		name, pickle, summary string
		device                int
	}
	var cases []tcase
	for _, f := range corpus.Match(t, root, "torch2.11/*/summary.txt", 16) {
		dir := filepath.Dir(f)
		cases = append(cases, tcase{filepath.Base(dir), filepath.Join(dir, "snapshot.pickle"), f, 0})
	}
	for dev := range 2 {
		dir := filepath.Join(root, "torch2.11", "two_devices")
		cases = append(cases, tcase{"two_devices/dev" + strconv.Itoa(dev), filepath.Join(dir, "snapshot.pickle"),
			filepath.Join(dir, "snapshot.summary.dev"+strconv.Itoa(dev)+".txt"), dev})
	}
	big := filepath.Join(root, "big", "gpt2_2M_events")
	if testing.Short() {
		t.Logf("-short: skipping %s (2,000,000 trace entries)", big)
	} else {
		// snapshot.Load reads the xz stream itself: nothing is written.
		cases = append(cases, tcase{"big/gpt2_2M_events", filepath.Join(big, "snapshot.pickle.xz"), filepath.Join(big, "summary.txt"), 0})
	}
	matched := 0
	for _, c := range cases {
		want, err := os.ReadFile(c.summary)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		s, err := snapshot.Load(c.pickle)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var buf bytes.Buffer
		if err := WriteTorchSummary(&buf, stats.CurrentStats(s, c.device)); err != nil {
			t.Fatal(err)
		}
		w, g := curUsageColumn(string(want)), curUsageColumn(buf.String())
		if len(w) != 29 {
			t.Fatalf("%s: found %d metric rows in torch's summary, want 29", c.name, len(w))
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%s: Cur Usage column differs (-torch +snapview):\n%s", c.name, diff)
			continue
		}
		matched++
	}
	t.Logf("Cur Usage column equal to torch's on %d of %d summaries", matched, len(cases))
}
