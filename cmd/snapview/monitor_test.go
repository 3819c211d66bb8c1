package main

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
)

const monitorTrain = "../../testdata/snapshots/monitor_train"

// monitorMeta is the ground truth gpurec.py wrote for monitor_train.
type monitorMeta struct {
	Leak struct {
		FromStep     int   `json:"from_step"`
		BytesPerStep int64 `json:"bytes_per_step"`
	} `json:"leak"`
	OutsidePyTorch struct {
		AtStep int   `json:"at_step"`
		Bytes  int64 `json:"bytes"`
	} `json:"outside_pytorch"`
	SMI struct {
		TZ string `json:"tz"`
	} `json:"smi"`
}

func readMonitorMeta(t *testing.T) monitorMeta {
	t.Helper()
	b, err := os.ReadFile(monitorTrain + ".meta.json")
	if err != nil {
		t.Fatal(err)
	}
	var m monitorMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSummaryStatsJSONCorpus runs `summary --format torch` on every
// memory_stats() dump of the shared corpus and of testdata and wants
// torch's memory_summary() text, byte for byte.
func TestSummaryStatsJSONCorpus(t *testing.T) {
	root := filepath.Dir(sharedSnapshot(t, "torch2.11"))
	var n int
	check := func(stats, want string, args ...string) {
		t.Helper()
		wantB, err := os.ReadFile(want)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := runSnapview(t, append(append([]string{"summary", "--format", "torch"}, args...), stats)...)
		if err != nil {
			t.Errorf("%s: %v", stats, err)
			return
		}
		if out != string(wantB) {
			t.Errorf("%s: the table differs from %s:\n%s", stats, want, out)
		}
		n++
	}
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/stats.json", 16}, {"whatif/*/*/stats.json", 15}} {
		for _, f := range corpus.Match(t, root, pat.glob, pat.min) {
			check(f, filepath.Join(filepath.Dir(f), "summary.txt"))
		}
	}
	two := filepath.Join(root, "torch2.11/two_devices")
	check(filepath.Join(two, "snapshot.stats.json"), filepath.Join(two, "snapshot.summary.dev0.txt"), "--device", "0")
	check(filepath.Join(two, "snapshot.stats.json"), filepath.Join(two, "snapshot.summary.dev1.txt"), "--device", "1")
	for _, name := range []string{"mlp_train", "leak_cache", "leak_cycle", "monitor_train"} {
		check("../../testdata/snapshots/"+name+".stats.json", "../../testdata/snapshots/"+name+".summary.txt")
	}
	// 16 torch2.11 folders with stats.json, 15 whatif runs, two devices,
	// four in testdata.
	if n < 37 {
		t.Errorf("only %d memory_stats() dumps checked, want 37", n)
	}
}

func TestSummaryStatsJSONText(t *testing.T) {
	out, _, err := runSnapview(t, "summary", sharedSnapshot(t, "whatif/varlen_train/roundup_4_cap4656M/stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"every figure is torch's own, exact",
		"CUDA OOMs: 1; cudaMalloc retries: 3;",
		"warning: 3 cudaMalloc retries (num_alloc_retries)",
		"warning: 1 CUDA out-of-memory error (num_ooms)",
		"865.0 MiB of it sits in 4 free pieces of split segments",
	} {
		// Where the lines wrap depends on the width: compare the words.
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("summary of a dump with retries lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runSnapview(t, "summary", "--json", sharedSnapshot(t, "whatif/varlen_train/max_split_128/stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Devices []struct {
			MemoryStats map[string]struct {
				Value     int64  `json:"value"`
				Exactness string `json:"exactness"`
			} `json:"memory_stats"`
			Warnings []struct {
				Kind string `json:"kind"`
			} `json:"warnings"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatal(err)
	}
	d := j.Devices[0]
	if f := d.MemoryStats["oversize_allocations.allocated"]; f.Value != 145 || f.Exactness != "exact" {
		t.Errorf("oversize_allocations.allocated = %+v, want 145, exact", f)
	}
	if len(d.Warnings) != 2 || d.Warnings[0].Kind != "fragmentation" || d.Warnings[1].Kind != "oversize" {
		t.Errorf("warnings %+v, want fragmentation and oversize", d.Warnings)
	}
}

// TestStatsRealLog checks the verdict on the real recording against its
// ground truth: 4 MiB kept per step from step 10.
func TestStatsRealLog(t *testing.T) {
	meta := readMonitorMeta(t)
	out, _, err := runSnapview(t, "stats", monitorTrain+".stats.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`Allocated memory keeps climbing: it started at step (\d+); \+80\.0 MiB from then to\s+step 29 .*\s+(?:.*), \+(\S+ MiB) per step\.`)
	m := want.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no climbing verdict:\n%s", out)
	}
	if m[1] != itoa(meta.Leak.FromStep) || m[2] != "4.0 MiB" || meta.Leak.BytesPerStep != 4<<20 {
		t.Errorf("verdict: from step %s, %s per step; ground truth: step %d, %d bytes", m[1], m[2], meta.Leak.FromStep, meta.Leak.BytesPerStep)
	}
	js, _, err := runSnapview(t, "stats", "--json", monitorTrain+".stats.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Devices []struct {
			Records   []json.RawMessage `json:"records"`
			Allocated struct {
				Climbing bool  `json:"climbing"`
				Rise     int64 `json:"rise_bytes"`
				Start    struct {
					Step int `json:"step"`
				} `json:"start"`
			} `json:"allocated_climb"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		t.Fatal(err)
	}
	a := j.Devices[0].Allocated
	if len(j.Devices[0].Records) != 30 || !a.Climbing || a.Start.Step != meta.Leak.FromStep || a.Rise != 20*meta.Leak.BytesPerStep {
		t.Errorf("--json: %d records, climb %+v; want 30, from step %d, %d bytes", len(j.Devices[0].Records), a, meta.Leak.FromStep, 20*meta.Leak.BytesPerStep)
	}
}

// TestSMIRealLog checks the nvidia-smi summary and the gap on the real
// recording: CuPy took 512 MiB outside PyTorch at step 5.
func TestSMIRealLog(t *testing.T) {
	meta := readMonitorMeta(t)
	out, _, err := runSnapview(t, "smi", "--tz", meta.SMI.TZ, "--stats", monitorTrain+".stats.jsonl", monitorTrain+".smi.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"nvidia-smi log, 2 GPUs, 240 rows, 2026/11/30 14:45:22.286 to 14:45:34.344",
		"|   0 |     120 | 140.4 GiB |      0 B |   561.0 MiB |  1.5 GiB | 14:45:33.541 |",
		"GPU 0: memory.used keeps climbing: it started at 14:45:31.937",
		"GPU 1: memory.used does not keep climbing",
		"+512.0 MiB between 14:45:31.236 and 14:45:31.336, by the end of step " + itoa(meta.OutsidePyTorch.AtStep),
		"Why nvidia-smi shows more than PyTorch reserved",
	} {
		if !strings.Contains(strings.ReplaceAll(out, "\n", " "), want) {
			t.Errorf("smi output lacks %q:\n%s", want, out)
		}
	}
	js, _, err := runSnapview(t, "smi", "--json", "--tz", meta.SMI.TZ, "--stats", monitorTrain+".stats.jsonl", monitorTrain+".smi.csv")
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		GPUs []struct {
			Max int64 `json:"max_used_bytes"`
		} `json:"gpus"`
		Gaps []struct {
			Min   int64 `json:"min_bytes"`
			Jumps []struct {
				Bytes int64  `json:"bytes"`
				Step  string `json:"step"`
			} `json:"jumps"`
		} `json:"gaps"`
	}
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.GPUs) != 2 || j.GPUs[0].Max != 1579<<20 || len(j.Gaps) != 1 || len(j.Gaps[0].Jumps) != 1 ||
		j.Gaps[0].Jumps[0].Bytes != meta.OutsidePyTorch.Bytes || !strings.HasPrefix(j.Gaps[0].Jumps[0].Step, "by the end of step 5 ") {
		t.Errorf("smi --json: %s", js)
	}
	// Against the snapshot's replay, which starts at the first CUDA
	// allocation: the least gap is the CUDA context, and the log agrees
	// with the snapshot at every record.
	out, stderr, err := runSnapview(t, "smi", "--tz", meta.SMI.TZ, "--snapshot", monitorTrain+".pickle", "--stats", monitorTrain+".stats.jsonl", monitorTrain+".smi.csv")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"GPU 0 (device 0), outside PyTorch: memory.used minus PyTorch's reserved bytes (replayed from the trace of ../../testdata/snapshots/monitor_train.pickle), at 104 samples from 14:45:23.518 to 14:45:33.842: least 527.0 MiB at 14:45:23.518",
		"+512.0 MiB between 14:45:31.236 and 14:45:31.336, by the end of step 5",
		"monitor_train.stats.jsonl and ../../testdata/snapshots/monitor_train.pickle agree: at 30 of 30 records within the trace",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("smi --snapshot lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr, "the trace of device 1 covers no time") {
		t.Errorf("stderr %q: want the warning about device 1", stderr)
	}
	if meta.OutsidePyTorch.Bytes != 512<<20 {
		t.Errorf("ground truth changed: %d bytes outside PyTorch", meta.OutsidePyTorch.Bytes)
	}
}

func TestReportMonitor(t *testing.T) {
	meta := readMonitorMeta(t)
	out := filepath.Join(t.TempDir(), "r.html")
	_, _, err := runSnapview(t, "report", "--smi", monitorTrain+".smi.csv", "--stats", monitorTrain+".stats.jsonl",
		"--tz", meta.SMI.TZ, "-o", out, monitorTrain+".pickle")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(string(b))
	for _, want := range []string{
		`id="monitor_d0"`, `"overlay":[[`, "Device memory beyond PyTorch",
		"least 527.0 MiB at 14:45:23.518", "+512.0 MiB between 14:45:31.236 and 14:45:31.336, by the end of step 5",
		"Allocated memory (memory_stats() log) keeps climbing: it started at step 10",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// The wrong zone: nothing lines up, and the report says which zone
	// would.
	_, _, err = runSnapview(t, "report", "--smi", monitorTrain+".smi.csv", "--tz", "+05:00", "-o", out, monitorTrain+".pickle")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(out)
	if page := html.UnescapeString(string(b)); !strings.Contains(page, "No nvidia-smi sample falls within the trace") || !strings.Contains(page, "try --tz +00:00") {
		t.Error("a log read in the wrong zone is not reported with the zone that lines it up")
	}
}

func TestMonitorBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := os.ReadFile(monitorTrain + ".stats.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(good), "\n")
	badLog := write("bad.jsonl", lines[0]+lines[1]+`{"step": 2, "allocated_bytes.all.current": "x"}`+"\n"+lines[3])
	badCSV := write("bad.csv", "timestamp, index, memory.used [MiB]\n2026/11/30 14:45:22.286, 0, 12 MiB\n2026/11/30 14:45:22.386, 0, twelve\n2026/11/30 14:45:22.486, 0, 12 MiB\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"stats", badLog}, `bad.jsonl: line 3: "allocated_bytes.all.current": want an integer`},
		{[]string{"smi", badCSV}, `bad.csv: line 3: memory.used: "twelve"`},
		{[]string{"report", "--smi", badCSV, monitorTrain + ".pickle"}, `bad.csv: line 3:`},
		{[]string{"summary", badCSV}, "an nvidia-smi CSV log, not a memory snapshot"},
		{[]string{"segments", monitorTrain + ".stats.json"}, "a memory_stats() dump, not a memory snapshot: snapview summary reads it"},
		{[]string{"leaks", monitorTrain + ".stats.jsonl"}, "a JSON Lines log of memory_stats() dumps, not a memory snapshot: snapview stats reads it"},
		{[]string{"smi", monitorTrain + ".pickle"}, "a memory snapshot, not an nvidia-smi CSV log"},
		{[]string{"stats", monitorTrain + ".smi.csv"}, "an nvidia-smi CSV log, not a memory_stats() log"},
	}
	for _, tt := range tests {
		_, _, err := runSnapview(t, tt.args...)
		if err == nil || !strings.Contains(err.Error(), tt.want) || exitCode(err) != 1 {
			t.Errorf("%q: error %v (exit %d), want exit 1 and %q", tt.args, err, exitCode(err), tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error on several lines: %q", tt.args, err)
		}
	}
	testUsageErrors(t, []usageCase{
		{"bad zone", []string{"smi", "--tz", "Mars/Olympus", monitorTrain + ".smi.csv"}, "--tz"},
		{"no such gpu", []string{"smi", "--gpu", "7", "--stats", monitorTrain + ".stats.jsonl", monitorTrain + ".smi.csv"}, "--gpu 7"},
		{"no such device", []string{"stats", "--device", "3", monitorTrain + ".stats.jsonl"}, "--device 3"},
		{"rows", []string{"stats", "--rows", "-1", monitorTrain + ".stats.jsonl"}, "--rows"},
	})
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestSMIGPUFlagChecked: --gpu is checked against the nvidia-smi log
// before the snapshot is read, and the error names the log; --gpu without
// what it applies to is refused, not ignored (TESTER finding 14).
func TestSMIGPUFlagChecked(t *testing.T) {
	smi, snap := monitorTrain+".smi.csv", monitorTrain+".pickle"
	testUsageErrors(t, []usageCase{
		{"report names the log", []string{"report", "-o", filepath.Join(t.TempDir(), "x.html"), "--device", "0", "--gpu", "7", "--smi", smi, snap},
			"--gpu 7: " + smi + ": the nvidia-smi log has no GPU 7 (GPUs: 0, 1)"},
		{"report without --smi", []string{"report", "-o", filepath.Join(t.TempDir(), "x.html"), "--gpu", "1", snap}, "give one"},
		{"smi without --stats", []string{"smi", "--gpu", "7", smi}, "--gpu 7 names the nvidia-smi GPU to set against --stats or --snapshot"},
		{"smi names the log", []string{"smi", "--gpu", "7", "--stats", monitorTrain + ".stats.jsonl", smi}, smi + ": the nvidia-smi log has no GPU 7"},
	})
}

// TestSMINegativeGap: a gap that is negative at most samples (GPU 1's
// samples set against device 0's reserved bytes) warns that the GPU is
// probably the wrong one, and does not explain it as memory outside
// PyTorch (TESTER finding 7).
func TestSMINegativeGap(t *testing.T) {
	args := []string{"smi", "--tz", "UTC", "--stats", monitorTrain + ".stats.jsonl", monitorTrain + ".smi.csv"}
	out, _, err := runSnapview(t, append(args[:1:1], append([]string{"--gpu", "1"}, args[1:]...)...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "least -310.0 MiB") || !strings.Contains(out, "Warning: negative at all 34 samples") ||
		!strings.Contains(out, "GPU 1 is probably not the one device 0 ran on") || strings.Contains(out, "Why nvidia-smi shows more") {
		t.Errorf("--gpu 1:\n%s", out)
	}
	js, _, err := runSnapview(t, append([]string{"smi", "--json", "--gpu", "1"}, args[1:]...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js, `"wrong_gpu_likely": true`) {
		t.Errorf("--json lacks wrong_gpu_likely true:\n%s", js)
	}
	// The right GPU: no warning, the explanation.
	out, _, err = runSnapview(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "Warning: negative") || !strings.Contains(out, "Why nvidia-smi shows more") {
		t.Errorf("GPU 0:\n%s", out)
	}
}

// TestSummaryFlatStatsDevice: a flat memory_stats() dump does not say its
// device; --device N says it, so the table of rank 1's dump (taken on
// device 1) is torch's own memory_summary(1) byte for byte (TESTER
// finding 12: --device 1 was refused and the header said device ID 0).
func TestSummaryFlatStatsDevice(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"ddp_rank1", []string{"--device", "1"}},
		{"ddp_rank0", nil},
		{"ddp_rank0", []string{"--device", "0"}},
	} {
		file := bundled(tt.name + ".stats.json")
		want, err := os.ReadFile(bundled(tt.name + ".summary.txt"))
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := runSnapview(t, append(append([]string{"summary", "--format", "torch"}, tt.args...), file)...)
		if err != nil {
			t.Errorf("%s %q: %v", tt.name, tt.args, err)
			continue
		}
		if out != string(want) {
			t.Errorf("%s %q: differs from %s.summary.txt:\n%s", tt.name, tt.args, tt.name, out)
		}
	}
	js, _, err := runSnapview(t, "summary", "--format", "json", "--device", "1", bundled("ddp_rank1.stats.json"))
	if err != nil || !strings.Contains(js, `"device": 1,`) {
		t.Errorf("--format json --device 1: %v\n%s", err, js)
	}
}

// TestReportMonitorAgreesWithSMI: the report's monitoring section and
// `snapview smi` follow one rule (monitor.Gaps): on the real monitor_train
// recording, set against its nvidia-smi and memory_stats() logs, every
// line smi --json gives of the gap (its samples, least, median, most and
// jumps with their steps) is on the page, the page's trace named as the
// snapshot's, and so is the agreement of the log with the replay.
func TestReportMonitorAgreesWithSMI(t *testing.T) {
	snap, smi, stats := fixture(t, "monitor_train.pickle"), fixture(t, "monitor_train.smi.csv"), fixture(t, "monitor_train.stats.jsonl")
	out, _, err := runSnapview(t, "smi", "--json", "--tz", "UTC", "--snapshot", snap, "--stats", stats, smi)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Gaps []struct {
			Device  int      `json:"device"`
			Samples int      `json:"samples"`
			Jumps   []any    `json:"jumps"`
			Lines   []string `json:"lines"`
		} `json:"gaps"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Gaps) != 1 || got.Gaps[0].Samples == 0 || len(got.Gaps[0].Jumps) != 2 || len(got.Notes) != 1 {
		t.Fatalf("smi --json: gaps %+v, notes %q; want one gap with samples and two jumps, one note", got.Gaps, got.Notes)
	}
	page, _, err := runSnapview(t, "report", "-o", "-", "--tz", "UTC", "--smi", smi, "--stats", stats, snap)
	if err != nil {
		t.Fatal(err)
	}
	page = html.UnescapeString(page)
	for _, line := range got.Gaps[0].Lines {
		want := strings.Replace(line, "replayed from the trace of "+snap, "replayed from the snapshot's trace", 1)
		if !strings.Contains(page, strings.TrimSpace(want)) {
			t.Errorf("the page lacks smi's line\n%s", want)
		}
	}
	// The agreement: "... agree: at 30 of 30 records within the trace ...".
	agree := regexp.MustCompile(`agree: at [0-9]+ of [0-9]+ records within the trace`)
	if w := agree.FindString(got.Notes[0]); w == "" || !strings.Contains(page, w) {
		t.Errorf("smi's agreement %q is not on the page (%q)", got.Notes[0], w)
	}
}
