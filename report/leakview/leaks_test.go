package leakview

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/snapshot"
)

// leakReports loads a bundled snapshot and runs Leaks on device 0 with
// the default options, edited.
func leakReports(t *testing.T, file string, edit func(r *replay.Result, o *leaks.LeakOptions)) (*snapshot.Snapshot, []*leaks.LeakReport) {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", file))
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	opts := leaks.DefaultLeakOptions(r)
	if edit != nil {
		edit(r, &opts)
	}
	rep, err := leaks.Leaks(s, r, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, []*leaks.LeakReport{rep}
}

func TestWriteLeaksGolden(t *testing.T) {
	tests := []struct {
		file   string
		at     string
		edit   func(r *replay.Result, o *leaks.LeakOptions)
		full   bool
		golden string
	}{
		{"leak_gc_oom.pickle", "auto", func(r *replay.Result, o *leaks.LeakOptions) { o.Top = 5 }, false, "leak_gc_oom.leaks.top5"},
		{"leak_gc_oom.pickle", "end", func(r *replay.Result, o *leaks.LeakOptions) { o.At = len(r.Allocated) - 1 }, false, "leak_gc_oom.leaks.end"},
		{"leak_bounded.pickle", "auto", func(r *replay.Result, o *leaks.LeakOptions) { o.Top = 7 }, false, "leak_bounded.leaks.top7"},
		{"leak_bounded.pickle", "auto", func(r *replay.Result, o *leaks.LeakOptions) { o.Top, o.Fold = 2, true }, true, "leak_bounded.leaks.fold.full"},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			s, reps := leakReports(t, tt.file, tt.edit)
			var buf bytes.Buffer
			if err := WriteLeaks(&buf, s, reps, LeakOptions{At: tt.at, Full: tt.full}); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tt.golden+".txt"), buf.String())
			buf.Reset()
			if err := WriteLeaksJSON(&buf, s, reps, nil); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tt.golden+".json"), buf.String())
		})
	}
}

func TestWriteLeaksJSONSchema(t *testing.T) {
	s, reps := leakReports(t, "leak_gc_oom.pickle", nil)
	var buf bytes.Buffer
	if err := WriteLeaksJSON(&buf, s, reps, nil); err != nil {
		t.Fatal(err)
	}
	// The fields other tools read, as the issue names them.
	var doc struct {
		Groups []struct {
			Rank         int      `json:"rank"`
			Score        *float64 `json:"score"`
			Bytes        int64    `json:"bytes"`
			Count        int      `json:"count"`
			FirstAllocUS *int64   `json:"first_alloc_us"`
			LastAllocUS  *int64   `json:"last_alloc_us"`
			Growth       []struct {
				Bytes int64 `json:"bytes"`
			} `json:"growth"`
			Verdict string `json:"verdict"`
			Stack   []struct {
				Filename string `json:"filename"`
				Line     int64  `json:"line"`
				Name     string `json:"name"`
			} `json:"stack"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Groups) == 0 {
		t.Fatal("no groups")
	}
	g := doc.Groups[0]
	if g.Rank != 1 || g.Score == nil || *g.Score <= 0 || g.Bytes != 224<<20 || g.Count != 7 || g.FirstAllocUS == nil ||
		g.LastAllocUS == nil || *g.LastAllocUS < *g.FirstAllocUS || len(g.Growth) != 28 || g.Verdict == "" {
		t.Errorf("group 1 = %+v", g)
	}
	// Innermost frame first, as in the snapshot.
	if len(g.Stack) < 2 || g.Stack[0].Name != "attach_debug" || g.Stack[0].Line != 120 || g.Stack[len(g.Stack)-1].Name != "<module>" {
		t.Errorf("group 1 stack = %+v", g.Stack)
	}
}

func TestLeakStackLines(t *testing.T) {
	const torch = "/venv/lib/python3.11/site-packages/torch/"
	s := &snapshot.Snapshot{
		Frames: []snapshot.Frame{
			{Filename: "??", Line: 0, Name: "torch::unwind::unwind()"},                                         // 0
			{Filename: "CUDACachingAllocator.cpp", Line: 0, Name: "c10::cuda::CUDACachingAllocator::malloc()"}, // 1
			{Filename: "??", Line: 0, Name: "at::native::empty_cuda(c10::ArrayRef<long>, ...)"},                // 2
			{Filename: torch + "nn/functional.py", Line: 1723, Name: "relu"},                                   // 3
			{Filename: "/home/x/model.py", Line: 5, Name: "forward"},                                           // 4
			{Filename: torch + "nn/modules/module.py", Line: 1790, Name: "_call_impl"},                         // 5
			{Filename: torch + "nn/modules/module.py", Line: 1779, Name: "_wrapped_call_impl"},                 // 6
			{Filename: "/home/x/train.py", Line: 20, Name: "main"},                                             // 7
			{Filename: "/usr/lib/python3.11/runpy.py", Line: 88, Name: "_run_code"},                            // 8
			{Filename: "/venv/lib/python3.11/site-packages/transformers/trainer.py", Line: 9, Name: "train"},   // 9
			{Filename: "??", Line: 0, Name: "torch::autograd::Engine::thread_main(...)"},                       // 10
		},
		Stacks: [][]snapshot.FrameID{
			{},
			{0, 1, 2, 3, 4, 5, 6, 7, 8},
			{1, 2, 0, 10},
			{3, 9, 7},
			{4, 4, 4, 4, 4, 4, 4, 4, 4, 4},
		},
	}
	tests := []struct {
		stack snapshot.StackID
		full  bool
		want  []string
	}{
		{0, false, []string{"<no stack recorded>"}},
		{1, false, []string{"(torch) functional.py:1723 relu", "/home/x/model.py:5 forward", "(torch) module.py:1790 _call_impl, _wrapped_call_impl",
			"/home/x/train.py:20 main", "(stdlib) runpy.py:88 _run_code"}},
		{1, true, []string{
			"??:0 torch::unwind::unwind()", "CUDACachingAllocator.cpp:0 c10::cuda::CUDACachingAllocator::malloc()",
			"??:0 at::native::empty_cuda(c10::ArrayRef<long>, ...)", torch + "nn/functional.py:1723 relu", "/home/x/model.py:5 forward",
			torch + "nn/modules/module.py:1790 _call_impl", torch + "nn/modules/module.py:1779 _wrapped_call_impl",
			"/home/x/train.py:20 main", "/usr/lib/python3.11/runpy.py:88 _run_code"}},
		// Only C++ frames: named, without the unwinder, the allocator and
		// at::empty's plumbing.
		{2, false, []string{"torch::autograd::Engine::thread_main"}},
		// Installed packages other than torch are the user's, shortened.
		{3, false, []string{"(torch) functional.py:1723 relu", "transformers/trainer.py:9 train", "/home/x/train.py:20 main"}},
		{4, false, append(slices.Repeat([]string{"/home/x/model.py:5 forward"}, StackLines-1), "... 3 more lines (--full shows every frame)")},
	}
	for _, tt := range tests {
		got := LeakStackLines(s, tt.stack, tt.full)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("LeakStackLines(%d, full=%t) mismatch (-want +got):\n%s", tt.stack, tt.full, diff)
		}
	}
	if got := stacks.Where(s, 1); got != "model.py:5 forward (via relu)" {
		t.Errorf("stacks.Where = %q", got)
	}
}

func TestSparkline(t *testing.T) {
	pts := func(v ...int64) []leaks.GrowthPoint {
		var out []leaks.GrowthPoint
		for _, b := range v {
			out = append(out, leaks.GrowthPoint{Bytes: b})
		}
		return out
	}
	tests := []struct {
		in   []leaks.GrowthPoint
		want string
	}{
		{pts(0, 0, 0), "[___]"},
		{pts(1, 2, 3, 4, 5, 6, 7, 8, 9), "[.:-=+*#%@]"},
		{pts(9, 9, 9), "[@@@]"},
		{pts(9, 0, 9, 1), "[@_@.]"},
		// 40 points fold to 20 characters, each the value at the end of its two.
		{pts(slices.Repeat([]int64{0, 9}, 20)...), "[" + strings.Repeat("@", 20) + "]"},
	}
	for _, tt := range tests {
		if got := sparkline(tt.in); got != tt.want {
			t.Errorf("sparkline(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLeakHints(t *testing.T) {
	tests := []struct {
		name string
		rep  leaks.LeakReport
		want []string // substrings, in order
	}{
		{"nothing to say", leaks.LeakReport{Entries: 10, LiveCount: 3, NoStackCount: 1}, nil},
		{"no stacks", leaks.LeakReport{Entries: 10, LiveCount: 3, NoStackCount: 3}, []string{"'<no stack recorded>' group", "_record_memory_history("}},
		{"no trace", leaks.LeakReport{LiveCount: 3, NoStackCount: 3}, []string{"no allocation history", "_record_memory_history("}},
		{"late", leaks.LeakReport{Entries: 10, Seeded: true}, []string{"starts after the run did"}},
	}
	for _, tt := range tests {
		got := LeakHints([]*leaks.LeakReport{&tt.rep})
		if len(got) != len(tt.want) {
			t.Errorf("%s: hints %+v, want %d", tt.name, got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if got[i].Kind != analysis.Hint || !strings.Contains(got[i].Text, w) {
				t.Errorf("%s: hint %d = %+v, want a hint containing %q", tt.name, i, got[i], w)
			}
		}
	}
}

func TestWriteLeaksNoGroups(t *testing.T) {
	s, reps := leakReports(t, "leak_gc_oom.pickle", func(r *replay.Result, o *leaks.LeakOptions) { o.MinBytes = 1 << 40 })
	var buf bytes.Buffer
	if err := WriteLeaks(&buf, s, reps, LeakOptions{At: "auto"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "No live allocations match the filters.") {
		t.Errorf("output:\n%s", buf.String())
	}
}

func TestWriteLeaksCautions(t *testing.T) {
	s := &snapshot.Snapshot{Stacks: [][]snapshot.FrameID{{}}}
	rep := &leaks.LeakReport{Entries: 500, At: 499, LastOOM: -1, TraceAllocs: 100, FreedShare: 0.3, Steps: steps.Steps{Source: steps.StepsSlices, Count: 20}}
	var buf bytes.Buffer
	if err := WriteLeaks(&buf, s, []*leaks.LeakReport{rep}, LeakOptions{At: "auto"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"at the end of the trace (500 entries)", "cut into 20 slices", "Only 30% of the allocations", "No live allocations."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	if err := WriteLeaks(&buf, s, nil, LeakOptions{}); err != nil || !strings.Contains(buf.String(), "nothing is live") {
		t.Errorf("no devices: %v %q", err, buf.String())
	}
}

// TestLeaksPatternStepName checks p27, whose steps come from a repeating
// allocation made under CPython frames with line numbers: the step is
// named by its first user frame, not by descrobject.c.
func TestLeaksPatternStepName(t *testing.T) {
	f := filepath.Join(corpus.Dir(t), "public", "p27-long-churn-few-live.pickle")
	if _, err := os.Stat(f); err != nil {
		t.Skip(err)
	}
	s, err := snapshot.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := leaks.Leaks(s, r, leaks.DefaultLeakOptions(r))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Steps.Source != steps.StepsPattern {
		t.Fatalf("steps from %v, want pattern", rep.Steps.Source)
	}
	line := leakStepsLine(stacks.NewFrameTable(s), rep, steps.StepsAuto)
	if !strings.Contains(line, "once per step at modeling_qwen2.py:218 forward") || strings.Contains(line, ".c:") {
		t.Errorf("steps line %q, want the step named modeling_qwen2.py:218 forward", line)
	}
}
