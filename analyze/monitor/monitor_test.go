package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/analyze/stats"

	"github.com/snapview/snapview/internal/corpus"
)

// sharedOrSkip returns the shared corpus's snapshots directory, or ends
// the test when it is absent (see internal/corpus).
func sharedOrSkip(t *testing.T) string {
	t.Helper()
	return corpus.Dir(t)
}

// flatLine returns a JSON Lines record: every memory_stats() key with
// value 0 but allocated/reserved current and peak, plus extra.
func flatLine(t *testing.T, alloc, reserved int64, extra map[string]any) string {
	t.Helper()
	m := map[string]any{}
	for _, f := range (&stats.MemoryStats{}).Figures() {
		m[f.Key] = 0
	}
	m["allocated_bytes.all.current"] = alloc
	m["allocated_bytes.all.peak"] = alloc
	m["reserved_bytes.all.current"] = reserved
	m["reserved_bytes.all.peak"] = reserved
	for k, v := range extra {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSniff(t *testing.T) {
	root := sharedOrSkip(t)
	files := map[string]Kind{
		"torch2.11/oom/stats.json":                   KindStats,
		"torch2.11/two_devices/snapshot.stats.json":  KindStats,
		"torch2.11/oom/snapshot.pickle":              KindSnapshot,
		"torch2.11/oom/meta.json":                    KindUnknown,
		"torch2.11/oom/summary.txt":                  KindUnknown,
		"whatif/frag_cap/default/snapshot.pickle.xz": KindSnapshot,
	}
	for name, want := range files {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := Sniff(b[:min(len(b), SniffLen)]); got != want {
			t.Errorf("Sniff(%s) = %v, want %v", name, got, want)
		}
	}
	if b, err := os.ReadFile("../../testdata/snapshots/tiny.json"); err != nil || Sniff(b) != KindSnapshot {
		t.Errorf("Sniff(tiny.json) = %v (%v), want a snapshot", Sniff(b), err)
	}
	inline := []struct {
		in   string
		want Kind
	}{
		{"timestamp, index, memory.used [MiB], memory.total [MiB]\n2026/11/30 15:00:00.000, 0, 1 MiB, 2 MiB\n", KindSMI},
		{"2026/11/30 15:00:00.000, 0, 1, 2\n", KindSMI},
		{"{\"step\": 0}\n{\"step\": 1}\n", KindStatsLog},
		{"{\"segments\": [], \"device_traces\": []}", KindSnapshot},
		{"\n\n", KindUnknown},
		{"hello", KindUnknown},
	}
	for _, c := range inline {
		if got := Sniff([]byte(c.in)); got != c.want {
			t.Errorf("Sniff(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestParseStatsLog(t *testing.T) {
	var lines []string
	for i := range 4 {
		lines = append(lines, flatLine(t, int64(100+i), 200, map[string]any{"step": i, "time": 1764514800.25 + float64(i), "loss": 0.5}))
	}
	log, err := ParseStatsLog(strings.NewReader(strings.Join(lines, "\n") + "\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Records) != 4 || len(log.Warnings) != 0 {
		t.Fatalf("got %d records, warnings %q", len(log.Records), log.Warnings)
	}
	r := log.Records[2]
	if r.Line != 3 || !r.HasStep || r.Step != 2 || r.TimeUS != 1764514802250000 || r.Stats.AllocatedBytes[stats.PoolAll].Current != 102 {
		t.Errorf("record 2 = line %d step %d time %d alloc %d", r.Line, r.Step, r.TimeUS, r.Stats.AllocatedBytes[stats.PoolAll].Current)
	}

	// A cut-short last line is left out with a warning.
	cut := strings.Join(lines, "\n") + "\n" + lines[0][:50]
	log, err = ParseStatsLog(strings.NewReader(cut))
	if err != nil || len(log.Records) != 4 || len(log.Warnings) != 1 || !strings.HasPrefix(log.Warnings[0], "line 5: incomplete") {
		t.Errorf("cut-short log: %v, %+v", err, log)
	}

	bad := []struct {
		in, want string
	}{
		{lines[0] + "\n" + lines[1][:50] + "\n" + lines[2] + "\n", "line 2: not a JSON object"},
		{lines[0] + "\n{\"step\": 1}\n", "line 2: memory_stats of device 0: missing"},
		{strings.Replace(lines[0], `"num_ooms":0`, `"num_ooms":"x"`, 1), `line 1: "num_ooms": want an integer`},
		{flatLine(t, 1, 1, map[string]any{"time": "yesterday"}), `line 1: "time": want seconds`},
		{flatLine(t, 1, 1, map[string]any{"step": 1.5}), `line 1: "step": want an integer`},
		{"\n\n", "no memory_stats() records"},
	}
	for _, c := range bad {
		_, err := ParseStatsLog(strings.NewReader(c.in))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParseStatsLog(%.40q…): error %v, want prefix %q", c.in, err, c.want)
		}
	}
}

func TestParseSMI(t *testing.T) {
	loc := time.FixedZone("UTC+2", 2*3600)
	t0 := time.Date(2026, 11, 30, 17, 0, 0, 100e6, loc).UnixMicro()
	tests := []struct {
		name, in string
		want     []SMISample
		warnings int
	}{
		{"header and units", "timestamp, index, memory.used [MiB], memory.total [MiB]\n" +
			"2026/11/30 17:00:00.100, 0, 500 MiB, 143771 MiB\n" +
			"2026/11/30 17:00:00.100, 1, 3 MiB, 143771 MiB\n" +
			"2026/11/30 17:00:00.200, 0, 520 MiB, 143771 MiB\n",
			[]SMISample{{2, 0, t0, 500 << 20, 143771 << 20}, {3, 1, t0, 3 << 20, 143771 << 20}, {4, 0, t0 + 100000, 520 << 20, 143771 << 20}}, 0},
		{"no header, no units", "2026/11/30 17:00:00.100, 0, 500, 143771\n2026/11/30 17:00:00.200, 0, 520, 143771\n",
			[]SMISample{{1, 0, t0, 500 << 20, 143771 << 20}, {2, 0, t0 + 100000, 520 << 20, 143771 << 20}}, 0},
		{"other order, extra columns, no index", "name, memory.used [MiB], timestamp, utilization.gpu [%]\n" +
			"NVIDIA H200, 7 MiB, 2026/11/30 17:00:00.100, 0 %\n",
			[]SMISample{{2, 0, t0, 7 << 20, 0}}, 0},
		{"N/A and cut-short last row", "timestamp, index, memory.used [MiB]\n" +
			"2026/11/30 17:00:00.100, 0, [N/A]\n2026/11/30 17:00:00.100, 1, 9 MiB\n2026/11/30 17:00:00.200, 1, 1",
			[]SMISample{{3, 1, t0, 9 << 20, 0}, {4, 1, t0 + 100000, 1 << 20, 0}}, 1},
		{"cut-short last row", "timestamp, index, memory.used [MiB]\n" +
			"2026/11/30 17:00:00.100, 1, 9 MiB\n2026/11/30 17:00",
			[]SMISample{{2, 1, t0, 9 << 20, 0}}, 1},
		{"repeated header", "timestamp, index, memory.used [MiB]\n2026/11/30 17:00:00.100, 1, 9 MiB\ntimestamp, index, memory.used [MiB]\n2026/11/30 17:00:00.100, 1, 9 MiB\n",
			[]SMISample{{2, 1, t0, 9 << 20, 0}, {4, 1, t0, 9 << 20, 0}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := ParseSMI(strings.NewReader(tt.in), loc)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, l.Samples); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
			if len(l.Warnings) != tt.warnings {
				t.Errorf("warnings %q, want %d", l.Warnings, tt.warnings)
			}
		})
	}
	bad := []struct{ in, want string }{
		{"timestamp, index\n", "line 1: the header has no memory.used column"},
		{"timestamp, index, memory.used [MiB]\n2026/11/30 17:00:00.100, 0, 12 MiB\n2026/11/30 17:00:00.100, x, 12 MiB\n2026/11/30 17:00:00.200, 0, 12 MiB\n", `line 3: index "x"`},
		{"2026/11/30 17:00:00.100, 0, 12 MiB\nyesterday, 0, 1\n2026/11/30 17:00:00.100, 0, 12 MiB\n", `line 2: timestamp "yesterday"`},
		{"2026/11/30 17:00:00.100, 0, 12 PB\n2026/11/30 17:00:00.100, 0, 12 MiB\n", `line 1: memory.used: "12 PB": unknown unit`},
		{"2026/11/30 17:00:00.100, 0\n2026/11/30 17:00:00.100, 0, 1\n", "line 1: 2 fields, no memory.used"},
		{"timestamp, index, memory.used [MiB]\n", "no nvidia-smi rows"},
	}
	for _, c := range bad {
		_, err := ParseSMI(strings.NewReader(c.in), loc)
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("ParseSMI(%.50q…): error %v, want prefix %q", c.in, err, c.want)
		}
	}
}

func TestFindClimb(t *testing.T) {
	steps := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(i)
		}
		return x
	}
	const mib = 1 << 20
	// flat then +4 MiB per step from step 10, after a warm-up.
	leak := make([]int64, 30)
	for i := range leak {
		leak[i] = 300 * mib
		if i == 0 {
			leak[i] = 200 * mib
		}
		if i >= 10 {
			leak[i] += int64(i-9) * 4 * mib
		}
	}
	// every third step.
	every3 := make([]int64, 30)
	for i := range every3 {
		every3[i] = 100*mib + int64(i/3)*mib
	}
	flat := make([]int64, 30)
	for i := range flat {
		flat[i] = 300*mib + int64(i%2)*mib
	}
	// climbs and then falls back.
	fall := make([]int64, 30)
	for i := range fall {
		fall[i] = int64(min(i, 12)) * mib
		if i > 20 {
			fall[i] = 0
		}
	}
	// jumps of warm-up in the middle of the run.
	warm := []int64{0, 500 * mib, 1000 * mib, 1004 * mib, 1008 * mib, 1012 * mib, 1016 * mib}
	tests := []struct {
		name     string
		y        []int64
		climbing bool
		start    int
		rise     int64
		highs    int
		maxAt    int
	}{
		{"leak from step 10", leak, true, 10, 80 * mib, 20, 29},
		{"one block every third step", every3, true, 3, 9 * mib, 9, 27},
		{"flat with noise", flat, false, -1, 0, 0, 1},
		{"climbs, then falls", fall, false, -1, 0, 0, 12},
		{"warm-up jumps left out", warm, true, 3, 16 * mib, 4, 6},
		{"too short", []int64{1, 2}, false, -1, 0, 0, 1},
		{"empty", nil, false, -1, 0, 0, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := FindClimb(steps(len(tt.y)), tt.y)
			if c.Climbing != tt.climbing || c.Start != tt.start || c.Rise != tt.rise || c.Highs != tt.highs || c.MaxAt != tt.maxAt {
				t.Errorf("FindClimb = %+v, want climbing %v start %d rise %d highs %d maxAt %d", c, tt.climbing, tt.start, tt.rise, tt.highs, tt.maxAt)
			}
		})
	}
}

func TestFindGap(t *testing.T) {
	const mib = 1 << 20
	reserved := Series{TimesUS: []int64{1000, 5000, 9000}, Values: []int64{100 * mib, 300 * mib, 300 * mib}}
	var samples []SMISample
	for i := range 20 {
		tm := int64(500 + i*500)
		used := int64(600 * mib)
		if tm >= 5000 {
			used += 200 * mib
		}
		if tm >= 7000 {
			used += 512 * mib // outside PyTorch
		}
		samples = append(samples, SMISample{GPU: 0, TimeUS: tm, Used: used})
	}
	g := FindGap(samples, reserved)
	if len(g.Points) != 17 { // 1000 to 9000 every 500
		t.Errorf("%d points, want 17", len(g.Points))
	}
	if g.Min != 500*mib || g.Max != 1012*mib || g.MinAtUS != 1000 {
		t.Errorf("gap min %d at %d, max %d", g.Min, g.MinAtUS, g.Max)
	}
	want := []GapJump{{AfterUS: 6500, TimeUS: 7000, Bytes: 512 * mib}}
	if diff := cmp.Diff(want, g.Jumps); diff != "" {
		t.Errorf("jumps (-want +got):\n%s", diff)
	}
	if v, ok := reserved.At(5000); !ok || v != 300*mib {
		t.Errorf("At(5000) = %d, %v", v, ok)
	}
	if _, ok := reserved.At(999); ok {
		t.Error("At before the series is known")
	}
}

func TestCheck(t *testing.T) {
	root := sharedOrSkip(t)
	want := map[string][]string{
		"torch2.11/oom":                     {FindingRetries, FindingOOMs},
		"torch2.11/fragmentation":           {FindingFragmentation},
		"whatif/varlen_train/max_split_128": {FindingFragmentation, FindingOversize},
		"torch2.11/mlp_train":               nil,
	}
	for dir, kinds := range want {
		b, err := os.ReadFile(filepath.Join(root, dir, "stats.json"))
		if err != nil {
			t.Fatal(err)
		}
		st, err := stats.ParseStatsJSON(b, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range Check(st[0]) {
			got = append(got, f.Kind)
		}
		if diff := cmp.Diff(kinds, got); diff != "" {
			t.Errorf("%s: findings (-want +got):\n%s%s", dir, diff, fmt.Sprint(Check(st[0])))
		}
	}
}

// TestFixtures reads the hand-made fixtures (testdata/gen/monitorgen.py):
// the noheader,nounits CSV gives the same samples as the one with header
// and units, and the log's verdicts are the ones planted.
func TestFixtures(t *testing.T) {
	const dir = "../../testdata/snapshots/"
	read := func(name string) *SMILog {
		f, err := os.Open(dir + name)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		l, err := ParseSMI(f, time.UTC)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := read("monitor_small.smi.csv"), read("monitor_small.noheader.csv")
	if !a.Header || b.Header || len(a.Samples) != 104 {
		t.Errorf("header %v/%v, %d samples", a.Header, b.Header, len(a.Samples))
	}
	for i := range b.Samples {
		b.Samples[i].Line++ // the header line
	}
	if diff := cmp.Diff(a.Samples, b.Samples); diff != "" {
		t.Errorf("noheader,nounits differs (-header +noheader):\n%s", diff)
	}
	f, err := os.Open(dir + "monitor_small.stats.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := ParseStatsLog(f)
	if err != nil {
		t.Fatal(err)
	}
	d := AnalyzeSteps(l)
	if len(d) != 1 || !d[0].Allocated.Climbing || d[0].Records[d[0].Allocated.Start].Step != 6 || d[0].Reserved.Climbing ||
		d[0].Records[d[0].FirstRetry].Step != 9 || d[0].FirstOOM != -1 || d[0].PeaksReset {
		t.Errorf("steps: %+v", d)
	}
	gpus := SummarizeSMI(a)
	// GPU 0 follows the snapshot's reserved bytes, not the log's (which
	// start at their final 472 MiB): the gap against the log also shows
	// the snapshot's first segments. The 512 MiB came at step 4.
	g := FindGap(gpus[0].Series, d[0].ReservedSeries())
	var found bool
	for _, j := range g.Jumps {
		if j.Bytes == 512<<20 && j.AfterUS < l.Records[4].TimeUS && j.TimeUS > l.Records[3].TimeUS {
			found = true
		}
	}
	if !found {
		t.Errorf("gap jumps %+v, want one of 512 MiB during step 4", g.Jumps)
	}
}

// TestParseStatsLogDevices reads records nested under "memory_stats" with
// a "device", and splits them by device.
func TestParseStatsLogDevices(t *testing.T) {
	var lines []string
	for step := range 4 {
		for dev := range 2 {
			inner := flatLine(t, int64(1000*(dev+1)+step*(dev)), 5000, nil)
			lines = append(lines, fmt.Sprintf(`{"step": %d, "device": %d, "time": "2026-11-30T15:00:0%dZ", "memory_stats": %s}`, step, dev, step, inner))
		}
	}
	l, err := ParseStatsLog(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	ds := AnalyzeSteps(l)
	if len(ds) != 2 || len(ds[0].Records) != 4 || ds[1].Device != 1 || !ds[1].XIsStep {
		t.Fatalf("devices %+v", ds)
	}
	if ds[0].Allocated.Climbing || !ds[1].Allocated.Climbing || ds[1].Allocated.Start != 1 {
		t.Errorf("climbs: device 0 %+v, device 1 %+v", ds[0].Allocated, ds[1].Allocated)
	}
	if r := ds[1].Records[2]; r.TimeUS != time.Date(2026, 11, 30, 15, 0, 2, 0, time.UTC).UnixMicro() {
		t.Errorf("time %d", r.TimeUS)
	}
}

// TestWindowsText reads logs with a UTF-8 byte order mark, and in UTF-16
// as Windows PowerShell writes a redirect.
func TestWindowsText(t *testing.T) {
	csvText := "timestamp, index, memory.used [MiB]\r\n2026/11/30 17:00:00.100, 0, 9 MiB\r\n"
	utf16le := []byte{0xff, 0xfe}
	for _, r := range csvText {
		utf16le = append(utf16le, byte(r), 0)
	}
	for name, in := range map[string][]byte{"utf-8 bom": append([]byte{0xef, 0xbb, 0xbf}, csvText...), "utf-16le": utf16le} {
		if k := Sniff(in); k != KindSMI {
			t.Errorf("%s: Sniff = %v", name, k)
		}
		l, err := ParseSMI(bytes.NewReader(in), time.UTC)
		if err != nil || len(l.Samples) != 1 || l.Samples[0].Used != 9<<20 || !l.Header {
			t.Errorf("%s: %v, %+v", name, err, l)
		}
	}
	line := flatLine(t, 5, 6, map[string]any{"step": 3})
	l, err := ParseStatsLog(bytes.NewReader(append([]byte{0xef, 0xbb, 0xbf}, line...)))
	if err != nil || l.Records[0].Step != 3 {
		t.Errorf("stats log with a BOM: %v", err)
	}
}

func TestAgree(t *testing.T) {
	var lines []string
	for i := range 4 {
		lines = append(lines, flatLine(t, int64(10+i), 100, map[string]any{"step": i, "time": 10 + i}))
	}
	l, err := ParseStatsLog(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	d := AnalyzeSteps(l)[0]
	times := []int64{10e6, 11e6, 12e6, 12.5e6}
	alloc := Series{TimesUS: times, Values: []int64{10, 11, 99, 13}}
	res := Series{TimesUS: times, Values: []int64{100, 100, 100, 100}}
	// Record 3 (13 s) is after the series: not checked; record 2 differs.
	if got, want := Agree(&d, alloc, res), (Agreement{Checked: 3, Equal: 2, First: 2}); got != want {
		t.Errorf("Agree = %+v, want %+v", got, want)
	}
}
