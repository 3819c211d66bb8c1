package leaks

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/frames"
	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/corpus"

	"github.com/snapview/snapview/snapshot"
)

func TestClassifyFrame(t *testing.T) {
	tests := []struct {
		file string
		line int64
		name string
		want frames.FrameKind
	}{
		{"/home/x/train.py", 12, "step", frames.FrameUser},
		{"/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/functional.py", 1723, "relu", frames.FrameTorch},
		{"/opt/torch/.venv/lib/python3.12/site-packages/transformers/modeling_utils.py", 3645, "cuda", frames.FrameUser},
		{"/usr/lib/python3/dist-packages/torch/optim/adam.py", 164, "_init_group", frames.FrameTorch},
		{`C:\Users\x\venv\Lib\site-packages\torch\nn\modules\module.py`, 1790, "_call_impl", frames.FrameTorch},
		{"/home/x/pytorch/torch/nn/functional.py", 12, "relu", frames.FrameTorch},
		{"/usr/lib/python3.12/threading.py", 1010, "run", frames.FrameStdlib},
		{"/opt/conda/lib/python3.11/runpy.py", 88, "_run_code", frames.FrameStdlib},
		{`C:\Python312\Lib\threading.py`, 1010, "run", frames.FrameStdlib},
		{"<frozen runpy>", 198, "_run_module_as_main", frames.FrameStdlib},
		{"/home/x/lib/helpers.py", 3, "f", frames.FrameUser},
		{"/home/x/train.py", 3, "train_start", frames.FrameUser},
		{"??", 0, "at::native::empty_cuda(...)", frames.FrameCpp},
		{"CUDACachingAllocator.cpp", 0, "c10::cuda::CUDACachingAllocator::malloc", frames.FrameCpp},
		{"", 0, "torch::unwind::unwind()", frames.FrameNoise},
		{"??", 0, "_start", frames.FrameNoise},
		{"Python/ceval.c", 0, "_PyEval_EvalFrameDefault", frames.FrameNoise},
		{"/usr/local/src/conda/python-3.10.14/Objects/methodobject.c", 543, "cfunction_call", frames.FrameNoise},
		{"/usr/local/src/conda/python-3.10.14/Modules/main.c", 1090, "Py_BytesMain", frames.FrameNoise},
		{"./csu/../sysdeps/nptl/libc_start_call_main.h", 58, "__libc_start_call_main", frames.FrameNoise},
		{"/src/pytorch/aten/src/ATen/native/cuda/Blas.cpp", 310, "at::native::addmm_out_cuda_impl", frames.FrameCpp},
		{"/tmp/torchinductor_x/ab/cabcdef.py", 40, "call", frames.FrameUser},
	}
	for _, tt := range tests {
		if got := frames.ClassifyFrame(snapshot.Frame{Filename: tt.file, Line: tt.line, Name: tt.name}); got != tt.want {
			t.Errorf("ClassifyFrame(%s:%d %s) = %v, want %v", tt.file, tt.line, tt.name, got, tt.want)
		}
	}
}

// leakTrace builds a snapshot whose every allocation gets its own
// segment of exactly its size (a multiple of 2 MiB of at least 10 MiB, so
// the allocator neither rounds nor splits it): the replay then follows it
// exactly, and the file's segments come from the builder's end state.
type leakTrace struct {
	s      *snapshot.Snapshot
	stacks map[string]snapshot.StackID
	next   snapshot.Addr
	t      int64
	live   map[snapshot.Addr]int64
	segs   []snapshot.Addr
	sizes  map[snapshot.Addr]int64
	frames map[snapshot.Addr]snapshot.StackID
}

func newLeakTrace() *leakTrace {
	return &leakTrace{
		s: &snapshot.Snapshot{
			Stacks: [][]snapshot.FrameID{{}}, Traces: [][]snapshot.TraceEntry{{}}, HasDeviceTraces: true,
			Settings: &snapshot.AllocatorSettings{MaxSplitSize: -1},
		},
		stacks: map[string]snapshot.StackID{}, next: 0x7f0000000000, t: 1_700_000_000_000_000,
		live: map[snapshot.Addr]int64{}, sizes: map[snapshot.Addr]int64{}, frames: map[snapshot.Addr]snapshot.StackID{},
	}
}

// stack interns a stack given as "file:line name" strings, innermost
// first.
func (b *leakTrace) stack(frames ...string) snapshot.StackID {
	key := strings.Join(frames, "|")
	if id, ok := b.stacks[key]; ok {
		return id
	}
	var ids []snapshot.FrameID
	for _, f := range frames {
		loc, name, _ := strings.Cut(f, " ")
		file, line, _ := strings.Cut(loc, ":")
		n := int64(0)
		for _, c := range line {
			n = n*10 + int64(c-'0')
		}
		fr := snapshot.Frame{Filename: file, Line: n, Name: name}
		k := slices.Index(b.s.Frames, fr) // frames are distinct, as the decoder interns them
		if k < 0 {
			k = len(b.s.Frames)
			b.s.Frames = append(b.s.Frames, fr)
		}
		ids = append(ids, snapshot.FrameID(k))
	}
	id := snapshot.StackID(len(b.s.Stacks))
	b.s.Stacks = append(b.s.Stacks, ids)
	b.stacks[key] = id
	return id
}

func (b *leakTrace) add(a snapshot.Action, addr snapshot.Addr, size int64, stack snapshot.StackID) {
	b.t += 100
	b.s.Traces[0] = append(b.s.Traces[0], snapshot.TraceEntry{
		Action: a, Addr: addr, Size: size, Stack: stack, TimeUS: b.t, Flags: snapshot.FlagTime | snapshot.FlagFrames | snapshot.FlagAddr,
	})
}

// alloc allocates mib MiB (at least 10, even) from stack and returns its
// address.
func (b *leakTrace) alloc(mib int64, stack snapshot.StackID) snapshot.Addr {
	size := mib << 20
	a := b.next
	b.next += snapshot.Addr(size + 2<<20)
	b.add(snapshot.ActionSegmentAlloc, a, size, stack)
	b.add(snapshot.ActionAlloc, a, size, stack)
	b.segs = append(b.segs, a)
	b.sizes[a], b.live[a], b.frames[a] = size, size, stack
	return a
}

func (b *leakTrace) free(a snapshot.Addr) {
	b.add(snapshot.ActionFreeRequested, a, b.live[a], b.frames[a])
	b.add(snapshot.ActionFreeCompleted, a, b.live[a], b.frames[a])
	delete(b.live, a)
}

func (b *leakTrace) annotate(stage, name string) {
	b.t += 10
	b.s.Annotations = append(b.s.Annotations, snapshot.Annotation{Stage: stage, Name: name, TimeUS: b.t})
	b.s.HasAnnotations = true
}

func (b *leakTrace) snapshot() *snapshot.Snapshot {
	for _, a := range b.segs {
		blk := snapshot.Block{Address: a, Size: b.sizes[a], State: snapshot.StateInactive}
		if size, ok := b.live[a]; ok {
			blk.RequestedSize, blk.State, blk.Stack = size, snapshot.StateActiveAllocated, b.frames[a]
		}
		sg := snapshot.Segment{Address: a, TotalSize: b.sizes[a], Type: "large", Blocks: []snapshot.Block{blk}}
		if blk.State == snapshot.StateActiveAllocated {
			sg.AllocatedSize, sg.ActiveSize, sg.RequestedSize = blk.Size, blk.Size, blk.Size
		}
		b.s.Segments = append(b.s.Segments, sg)
	}
	return b.s
}

// trainingRun is a small training loop of steps steps: parameters at
// start, an input batch and an activation freed every step, a leak kept
// every leakEvery steps (never when 0), and with annotate an
// Optimizer.step#SGD.step range per step.
func trainingRun(steps, leakEvery int, annotate bool) (*snapshot.Snapshot, map[string]snapshot.StackID) {
	b := newLeakTrace()
	st := map[string]snapshot.StackID{
		"params": b.stack("/venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1341 convert", "/home/x/train.py:10 main"),
		"batch":  b.stack("/home/x/train.py:20 main"),
		"act":    b.stack("/venv/lib/python3.11/site-packages/torch/nn/functional.py:1723 relu", "/home/x/model.py:5 forward", "/home/x/train.py:21 main"),
		"leak":   b.stack("/home/x/train.py:25 main"),
	}
	b.alloc(10, st["params"])
	b.alloc(12, st["params"])
	for step := range steps {
		x := b.alloc(10, st["batch"])
		act := b.alloc(20, st["act"])
		if leakEvery > 0 && step%leakEvery == 0 {
			b.alloc(10, st["leak"])
		}
		if annotate {
			b.annotate("START", "Optimizer.step#SGD.step")
			b.annotate("END", "Optimizer.step#SGD.step")
		}
		b.free(act)
		b.free(x)
	}
	return b.snapshot(), st
}

// groupOf returns the group of report whose stack is id, nil if none.
func groupOf(rep *LeakReport, id snapshot.StackID) *LeakGroup {
	for i := range rep.Groups {
		if rep.Groups[i].Stack == id {
			return &rep.Groups[i]
		}
	}
	return nil
}

func leaksFor(t *testing.T, s *snapshot.Snapshot, device int, edit func(*LeakOptions)) *LeakReport {
	t.Helper()
	r, err := replay.Run(s, device, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Check.Equal {
		t.Fatalf("replay end check: %v", r.Check.Differences)
	}
	opts := DefaultLeakOptions(r)
	opts.Top = 0
	if edit != nil {
		edit(&opts)
	}
	rep, err := Leaks(s, r, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestLeaksTrainingRun(t *testing.T) {
	tests := []struct {
		name      string
		leakEvery int
		annotate  bool
		steps     steps.StepSource
		wantSrc   steps.StepSource
		wantKind  VerdictKind
		wantText  string
	}{
		// Optimizer.step ranges end each step; the batch allocated first in
		// each marks where the steps start.
		{"every step, annotations", 1, true, steps.StepsAuto, steps.StepsPattern, VerdictLeak, "grows every step, never freed: likely leak"},
		{"every step, annotations asked", 1, true, steps.StepsAnnotation, steps.StepsAnnotation, VerdictLeak, "grows every step, never freed: likely leak"},
		{"every step, pattern", 1, false, steps.StepsAuto, steps.StepsPattern, VerdictLeak, "grows every step, never freed: likely leak"},
		{"every 3 steps, pattern", 3, false, steps.StepsAuto, steps.StepsPattern, VerdictLeak, "grows every 3 steps, never freed: likely leak"},
		{"every step, slices", 1, false, steps.StepsSlices, steps.StepsSlices, VerdictLeak, "grows steadily (in"},
		{"annotation asked, none there", 1, false, steps.StepsAnnotation, steps.StepsPattern, VerdictLeak, "grows every step"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, st := trainingRun(24, tt.leakEvery, tt.annotate)
			rep := leaksFor(t, s, 0, func(o *LeakOptions) { o.Steps = tt.steps })
			if rep.Steps.Source != tt.wantSrc {
				t.Errorf("steps from %v, want %v", rep.Steps.Source, tt.wantSrc)
			}
			if tt.wantSrc != steps.StepsSlices && rep.Steps.Count != 24 {
				t.Errorf("%d steps, want 24", rep.Steps.Count)
			}
			if len(rep.Groups) < 2 {
				t.Fatalf("%d groups, want the leak and the parameters", len(rep.Groups))
			}
			leak := &rep.Groups[0]
			if leak.Stack != st["leak"] || leak.Rank != 1 {
				t.Fatalf("rank 1 is stack %d (%v), want the leak %d", leak.Stack, leak.Verdict, st["leak"])
			}
			if leak.Verdict.Kind != tt.wantKind || !strings.HasPrefix(leak.Verdict.String(), tt.wantText) {
				t.Errorf("leak verdict %v %q, want %v %q...", leak.Verdict.Kind, leak.Verdict, tt.wantKind, tt.wantText)
			}
			if leak.Score <= 0 || leak.Score > float64(leak.Bytes) {
				t.Errorf("leak score %v, want in (0, %d]", leak.Score, leak.Bytes)
			}
			params := groupOf(rep, st["params"])
			if params == nil || params.Verdict.Kind != VerdictAtStart || params.Score != 0 || params.Rank < leak.Rank {
				t.Errorf("parameters: %+v, want at-start, score 0, below the leak", params)
			}
			if g := groupOf(rep, st["act"]); g != nil {
				t.Errorf("freed temporaries appear: %+v", g)
			}
			for i, g := range rep.Groups {
				if len(g.Growth) != len(rep.Slices) {
					t.Errorf("group %d: %d growth points, %d slices", i, len(g.Growth), len(rep.Slices))
				}
			}
			// The growth of the leak never decreases and ends at its live bytes.
			for k := 1; k < len(leak.Growth); k++ {
				if leak.Growth[k].Bytes < leak.Growth[k-1].Bytes {
					t.Errorf("leak growth decreases at slice %d: %d < %d", k, leak.Growth[k].Bytes, leak.Growth[k-1].Bytes)
				}
			}
			if last := leak.Growth[len(leak.Growth)-1]; last.Bytes != leak.Bytes || last.Count != leak.Count {
				t.Errorf("leak growth ends at %d bytes in %d, want %d in %d", last.Bytes, last.Count, leak.Bytes, leak.Count)
			}
		})
	}
}

func TestLeaksOptions(t *testing.T) {
	s, st := trainingRun(12, 1, false)
	tests := []struct {
		name       string
		edit       func(*LeakOptions)
		wantStacks []snapshot.StackID
	}{
		{"default", nil, []snapshot.StackID{st["leak"], st["params"]}},
		{"sort bytes", func(o *LeakOptions) { o.Sort = LeakSortBytes }, []snapshot.StackID{st["leak"], st["params"]}},
		{"sort count", func(o *LeakOptions) { o.Sort = LeakSortCount }, []snapshot.StackID{st["leak"], st["params"]}},
		{"top 1", func(o *LeakOptions) { o.Top = 1 }, []snapshot.StackID{st["leak"]}},
		{"min bytes", func(o *LeakOptions) { o.MinBytes = 100 << 20 }, []snapshot.StackID{st["leak"]}},
		{"focus", func(o *LeakOptions) { o.Focus = regexp.MustCompile(`torch/nn/modules`) }, []snapshot.StackID{st["params"]}},
		{"ignore", func(o *LeakOptions) { o.Ignore = regexp.MustCompile(`train\.py:25 `) }, []snapshot.StackID{st["params"]}},
		{"focus nothing", func(o *LeakOptions) { o.Focus = regexp.MustCompile(`nowhere`) }, nil},
		{"before the first entry", func(o *LeakOptions) { o.At = -1 }, nil},
		{"after the parameters", func(o *LeakOptions) { o.At = 3 }, []snapshot.StackID{st["params"]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := leaksFor(t, s, 0, tt.edit)
			var got []snapshot.StackID
			for i, g := range rep.Groups {
				got = append(got, g.Stack)
				if g.Rank != i+1 {
					t.Errorf("group %d has rank %d", i, g.Rank)
				}
			}
			if !slices.Equal(got, tt.wantStacks) {
				t.Errorf("stacks %v, want %v", got, tt.wantStacks)
			}
		})
	}
	// With 12 steps of 10 MiB, the sort by bytes puts the 120 MiB leak
	// first; parameters hold 22 MiB.
	rep := leaksFor(t, s, 0, nil)
	if rep.LiveBytes != 142<<20 || rep.LiveCount != 14 || rep.TotalGroups != 2 {
		t.Errorf("live %d bytes in %d allocations, %d groups; want 142 MiB in 14, 2 groups", rep.LiveBytes, rep.LiveCount, rep.TotalGroups)
	}
}

func TestLeaksFold(t *testing.T) {
	b := newLeakTrace()
	// Two stacks that differ only inside torch, one outside.
	a := b.stack("/venv/lib/python3.11/site-packages/torch/nn/functional.py:1723 relu", "/home/x/model.py:5 forward")
	c := b.stack("/venv/lib/python3.11/site-packages/torch/nn/functional.py:835 _max_pool2d", "/home/x/model.py:5 forward")
	d := b.stack("/home/x/model.py:6 forward")
	for range 4 {
		b.alloc(10, a)
		b.alloc(12, c)
		b.alloc(10, d)
	}
	s := b.snapshot()
	whole := leaksFor(t, s, 0, nil)
	folded := leaksFor(t, s, 0, func(o *LeakOptions) { o.Fold = true })
	if whole.TotalGroups != 3 || folded.TotalGroups != 2 {
		t.Fatalf("groups: %d whole, %d folded; want 3 and 2", whole.TotalGroups, folded.TotalGroups)
	}
	g := folded.Groups[0]
	if g.Stacks != 2 || g.Stack != c || g.Count != 8 || g.Bytes != 88<<20 {
		t.Errorf("folded group: stack %d of %d, %d allocations, %d bytes; want %d of 2, 8, 88 MiB", g.Stack, g.Stacks, g.Count, g.Bytes, c)
	}
}

func TestLeaksNoStacksNoTrace(t *testing.T) {
	s, _ := trainingRun(8, 1, false)
	// Strip every stack, as context=None records them.
	for i := range s.Traces[0] {
		s.Traces[0][i].Stack, s.Traces[0][i].Flags = snapshot.NoStack, snapshot.FlagTime|snapshot.FlagAddr
	}
	for i := range s.Segments {
		for j := range s.Segments[i].Blocks {
			s.Segments[i].Blocks[j].Stack = snapshot.NoStack
		}
	}
	rep := leaksFor(t, s, 0, nil)
	if len(rep.Groups) != 1 || rep.Groups[0].Stack != snapshot.NoStack || rep.NoStackCount != rep.LiveCount || rep.FramesKey {
		t.Errorf("no stacks: %d groups, stack %v, %d of %d without stack, frames key %t; want one <no stack> group",
			len(rep.Groups), rep.Groups[0].Stack, rep.NoStackCount, rep.LiveCount, rep.FramesKey)
	}
	if rep.Steps.Source != steps.StepsSlices {
		t.Errorf("steps from %v without stacks, want slices", rep.Steps.Source)
	}

	// The same segments without a trace: what is live, no history.
	s.Traces, s.HasDeviceTraces = nil, false
	rep = leaksFor(t, s, 0, nil)
	if rep.At != -1 || len(rep.Slices) != 0 || len(rep.Groups) != 1 || rep.Groups[0].Verdict.Kind != VerdictNoHistory {
		t.Errorf("no trace: at %d, %d slices, groups %+v; want -1, 0, one no-history group", rep.At, len(rep.Slices), rep.Groups)
	}
	if rep.LiveCount != 10 {
		t.Errorf("no trace: %d live allocations, want 10 (2 parameters, 8 leaked)", rep.LiveCount)
	}
}

func TestLeaksMomentOutOfRange(t *testing.T) {
	s, _ := trainingRun(3, 1, false)
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []int{-2, len(s.Traces[0])} {
		if _, err := Leaks(s, r, LeakOptions{At: at}); err == nil {
			t.Errorf("Leaks at %d: no error", at)
		}
	}
}

func TestParseLeakFlags(t *testing.T) {
	for _, o := range []LeakSort{LeakSortScore, LeakSortBytes, LeakSortCount} {
		if got, err := ParseLeakSort(o.String()); err != nil || got != o {
			t.Errorf("ParseLeakSort(%q) = %v, %v", o.String(), got, err)
		}
	}
	for _, src := range []steps.StepSource{steps.StepsAuto, steps.StepsAnnotation, steps.StepsPattern, steps.StepsSlices} {
		if got, err := steps.ParseStepSource(src.String()); err != nil || got != src {
			t.Errorf("ParseStepSource(%q) = %v, %v", src.String(), got, err)
		}
	}
	for _, bad := range []string{"", "Score", "none"} {
		if _, err := ParseLeakSort(bad); err == nil {
			t.Errorf("ParseLeakSort(%q): no error", bad)
		}
		if _, err := steps.ParseStepSource(bad); err == nil {
			t.Errorf("ParseStepSource(%q): no error", bad)
		}
	}
}

func TestAnnotationStepsPreference(t *testing.T) {
	b := newLeakTrace()
	id := b.stack("/home/x/train.py:1 main")
	for step := range 5 {
		b.annotate("START", "ProfilerStep#"+string(rune('0'+step)))
		b.annotate("START", "Optimizer.step#Adam.step")
		b.annotate("START", "forward")
		b.alloc(10, id)
	}
	s := b.snapshot()
	name, starts := steps.FindAnnotation(s, 0, s.Traces[0])
	if name != "ProfilerStep#N" || len(starts) != 4 {
		// The first START precedes the first entry: 4 steps in the trace.
		t.Errorf("annotationSteps = %q, %v; want ProfilerStep#N and 4 starts", name, starts)
	}
	s.Annotations = slices.DeleteFunc(s.Annotations, func(a snapshot.Annotation) bool { return strings.HasPrefix(a.Name, "Profiler") })
	if name, _ := steps.FindAnnotation(s, 0, s.Traces[0]); name != "Optimizer.step#Adam.step" {
		t.Errorf("without ProfilerStep: %q, want the optimizer's range", name)
	}
	s.Annotations = slices.DeleteFunc(s.Annotations, func(a snapshot.Annotation) bool { return strings.HasPrefix(a.Name, "Optimizer") })
	if name, starts := steps.FindAnnotation(s, 0, s.Traces[0]); starts != nil {
		t.Errorf("only 'forward' ranges: %q %v, want none", name, starts)
	}
}

// bundledLeak loads a snapshot of testdata/snapshots.
func bundledLeak(t *testing.T, name string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", name))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hasFrame reports whether stack id has a frame in a file ending with
// file at line.
func hasFrame(s *snapshot.Snapshot, id snapshot.StackID, file string, line int64) bool {
	return slices.ContainsFunc(s.Stack(id), func(f snapshot.FrameID) bool {
		return strings.HasSuffix(s.Frames[f].Filename, file) && s.Frames[f].Line == line
	})
}

// rankOf returns the rank of the first group whose stack has file:line,
// 0 if none.
func rankOf(s *snapshot.Snapshot, rep *LeakReport, file string, line int64) int {
	for _, g := range rep.Groups {
		if hasFrame(s, g.Stack, file, line) {
			return g.Rank
		}
	}
	return 0
}

func TestLeaksBundled(t *testing.T) {
	type want struct {
		file  string
		line  int64
		rank  int // exact rank; 0: just present
		kind  VerdictKind
		steps int
	}
	tests := []struct {
		name    string
		file    string
		at      func(r *replay.Result) int
		wantSrc steps.StepSource
		want    []want
	}{
		{
			// Hand-made (testdata/gen/leakgen.py): a cache leak among same-size
			// temporaries, a bounded LRU, a warm-up table, parameters, Adam
			// state and the last step in flight; no annotations.
			name: "cache among bounded", file: "leak_bounded.pickle", wantSrc: steps.StepsPattern,
			want: []want{
				{"train.py", 61, 1, VerdictLeak, 40},
				{"train.py", 70, 0, VerdictAtStart, 0},
				{"model.py", 140, 0, VerdictBounded, 0},
				{"cache.py", 40, 0, VerdictBounded, 0},
				{"train.py", 30, 0, VerdictAtStart, 0},
				{"model.py", 95, 0, VerdictInFlight, 0},
			},
		},
		{
			// Hand-made: field report 27, a gc sawtooth ending in an OOM, and a
			// plain leak under it; ProfilerStep#N annotations.
			name: "gc sawtooth at the OOM", file: "leak_gc_oom.pickle", wantSrc: steps.StepsAnnotation,
			want: []want{
				{"model.py", 120, 1, VerdictSawtooth, 27},
				{"model.py", 150, 2, VerdictLeak, 27},
				{"train.py", 30, 3, VerdictAtStart, 0},
			},
		},
		{
			// After the OOM's unwinding the cycles are gone; the plain leak is not.
			name: "gc sawtooth at the end", file: "leak_gc_oom.pickle", wantSrc: steps.StepsAnnotation,
			at: func(r *replay.Result) int { return len(r.Allocated) - 1 },
			want: []want{
				{"model.py", 150, 1, VerdictLeak, 27},
				{"train.py", 30, 2, VerdictAtStart, 0},
			},
		},
		{
			// Real (testdata/gen/gpugen.py on an H200): a dict never evicted.
			name: "real cache", file: "leak_cache.pickle", wantSrc: steps.StepsPattern, // Optimizer.step ends each step
			want: []want{{"gpugen.py", 72, 1, VerdictLeak, 24}},
		},
		{
			// Real: reference cycles freed by gc.collect() every 6 steps.
			name: "real cycles", file: "leak_cycle.pickle", wantSrc: steps.StepsPattern,
			want: []want{{"gpugen.py", 105, 1, VerdictSawtooth, 29}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := bundledLeak(t, tt.file)
			rep := leaksFor(t, s, 0, func(o *LeakOptions) {
				if tt.at != nil {
					r, _ := replay.Run(s, 0, replay.Options{})
					o.At = tt.at(r)
				}
			})
			if rep.Steps.Source != tt.wantSrc {
				t.Errorf("steps from %v, want %v", rep.Steps.Source, tt.wantSrc)
			}
			for _, w := range tt.want {
				rank := rankOf(s, rep, w.file, w.line)
				if rank == 0 || w.rank > 0 && rank != w.rank {
					t.Errorf("%s:%d has rank %d, want %d", w.file, w.line, rank, w.rank)
					continue
				}
				g := rep.Groups[rank-1]
				if g.Verdict.Kind != w.kind {
					t.Errorf("%s:%d: verdict %v (%q), want %v", w.file, w.line, g.Verdict.Kind, g.Verdict, w.kind)
				}
				if w.steps > 0 && rep.Steps.Count != w.steps {
					t.Errorf("%d steps, want %d", rep.Steps.Count, w.steps)
				}
				if w.kind.Suspicious() != (g.Score > 0) {
					t.Errorf("%s:%d: score %v with verdict %v", w.file, w.line, g.Score, g.Verdict.Kind)
				}
			}
		})
	}
}

// TestLeaksLeakTrain checks the ground truth of the real leak_train
// snapshot (../shared/snapshots/torch2.11/leak_train/meta.json): the
// autograd graph kept by losses.append(loss) (activations allocated under
// Net.forward, snapgen.py:161-162, called from :173, and the inputs of
// :171) and the detach().clone() of :180 rank in the top 5, whatever the
// step source and key; the parameters (:166) rank below them.
func TestLeaksLeakTrain(t *testing.T) {
	path := filepath.Join(Corpus(t), "torch2.11", "leak_train", "snapshot.pickle")
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, steps := range []steps.StepSource{steps.StepsAuto, steps.StepsPattern, steps.StepsSlices} {
		for _, fold := range []bool{false, true} {
			t.Run(steps.String()+map[bool]string{true: ",fold"}[fold], func(t *testing.T) {
				rep := leaksFor(t, s, 0, func(o *LeakOptions) { o.Steps, o.Fold = steps, fold })
				graph := 0 // best rank of the retained graph
				for _, line := range []int64{161, 162, 171} {
					if r := rankOf(s, rep, "snapgen.py", line); r > 0 && (graph == 0 || r < graph) {
						graph = r
					}
				}
				clone := rankOf(s, rep, "snapgen.py", 180)
				params := rankOf(s, rep, "snapgen.py", 166)
				if graph < 1 || graph > 5 || clone < 1 || clone > 5 {
					t.Errorf("graph leak rank %d, clone leak rank %d; want both in 1..5", graph, clone)
				}
				if params <= max(graph, clone) {
					t.Errorf("parameters rank %d, want below %d and %d", params, graph, clone)
				}
				for _, r := range []int{graph, clone} {
					if k := rep.Groups[r-1].Verdict.Kind; k != VerdictLeak {
						t.Errorf("rank %d: verdict %v (%q), want leak", r, k, rep.Groups[r-1].Verdict)
					}
				}
				if k := rep.Groups[params-1].Verdict.Kind; k != VerdictAtStart {
					t.Errorf("parameters: verdict %v, want at-start", k)
				}
			})
		}
	}
}

// TestLeaksCorpus runs Leaks on every device of every shared snapshot and
// checks what must always hold.
func TestLeaksCorpus(t *testing.T) {
	root := Corpus(t)
	var files []string
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/snapshot.pickle", 17}, {"public/*.pickle", 34}, {"torch2.11-probe/*.pickle", 13}} {
		files = append(files, corpus.Match(t, root, pat.glob, pat.min)...)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), func(t *testing.T) {
			s, err := snapshot.Load(f)
			if err != nil {
				t.Fatal(err) // every one of these loads
			}
			for _, dev := range s.Devices() {
				r, err := replay.Run(s, dev, replay.Options{})
				if err != nil {
					t.Fatal(err)
				}
				opts := DefaultLeakOptions(r)
				opts.Top = 0
				rep, err := Leaks(s, r, opts)
				if err != nil {
					t.Fatalf("device %d: %v", dev, err)
				}
				checkLeakReport(t, rep)
			}
		})
	}
}

// checkLeakReport checks the invariants of a report with every group.
func checkLeakReport(t *testing.T, rep *LeakReport) {
	t.Helper()
	var bytes int64
	count := 0
	for i, g := range rep.Groups {
		bytes += g.Bytes
		count += g.Count
		if g.Rank != i+1 {
			t.Errorf("device %d: group %d has rank %d", rep.Device, i, g.Rank)
		}
		if i > 0 && g.Score > rep.Groups[i-1].Score {
			t.Errorf("device %d: group %d scores %v, more than the one before (%v)", rep.Device, i, g.Score, rep.Groups[i-1].Score)
		}
		if len(g.Growth) != len(rep.Slices) {
			t.Errorf("device %d: group %d has %d growth points for %d slices", rep.Device, i, len(g.Growth), len(rep.Slices))
		}
		if g.Score < 0 || g.Score > float64(g.Bytes) || g.Steadiness < 0 || g.Steadiness > 1 {
			t.Errorf("device %d: group %d: score %v of %d bytes, steadiness %v", rep.Device, i, g.Score, g.Bytes, g.Steadiness)
		}
		if !g.Verdict.Kind.Suspicious() && g.Score != 0 {
			t.Errorf("device %d: group %d: %v scores %v", rep.Device, i, g.Verdict.Kind, g.Score)
		}
		// Parameters and state are claimed only for groups never freed,
		// allocated in the first steps.
		if strings.Contains(g.Verdict.String(), "parameters") {
			for k, p := range g.Growth {
				if p.Frees > 0 {
					t.Errorf("device %d: group %d (%q) freed %d in slice %d", rep.Device, i, g.Verdict, p.Frees, k)
				}
			}
			if g.Verdict.Kind != VerdictAtStart || g.LastAlloc > rep.Slices[max(2, (len(rep.Slices)+9)/10)-1].End {
				t.Errorf("device %d: group %d (%q) allocated up to entry %d", rep.Device, i, g.Verdict, g.LastAlloc)
			}
		}
		if g.Verdict.Kind == VerdictAtStart && rep.Steps.Prologue && strings.Contains(g.Verdict.String(), "before the first step,") &&
			g.LastAlloc >= rep.Slices[1].Start {
			t.Errorf("device %d: group %d (%q) allocated at entry %d, step 1 starts at %d", rep.Device, i, g.Verdict, g.LastAlloc, rep.Slices[1].Start)
		}
		if n := len(g.Growth); n > 0 && (g.Growth[n-1].Bytes < g.Bytes-g.BeforeTraceBytes || g.Growth[n-1].Count < g.Count) {
			t.Errorf("device %d: group %d: growth ends at %d bytes in %d, below its %d live bytes in %d", rep.Device, i,
				g.Growth[n-1].Bytes, g.Growth[n-1].Count, g.Bytes, g.Count)
		}
	}
	if bytes != rep.LiveBytes || count != rep.LiveCount {
		t.Errorf("device %d: groups hold %d bytes in %d, live %d in %d", rep.Device, bytes, count, rep.LiveBytes, rep.LiveCount)
	}
	for k := 1; k < len(rep.Slices); k++ {
		if rep.Slices[k].Start != rep.Slices[k-1].End+1 {
			t.Errorf("device %d: slice %d starts at %d, the one before ends at %d", rep.Device, k, rep.Slices[k].Start, rep.Slices[k-1].End)
		}
	}
	if n := len(rep.Slices); n > 0 && (rep.Slices[0].Start != 0 || rep.Slices[n-1].End != rep.At) {
		t.Errorf("device %d: slices cover %d..%d, want 0..%d", rep.Device, rep.Slices[0].Start, rep.Slices[n-1].End, rep.At)
	}
}

// TestLeaksMultiDevice checks a file with two GPUs: each device is
// analysed on its own trace.
func TestLeaksMultiDevice(t *testing.T) {
	path := filepath.Join(Corpus(t), "torch2.11", "two_devices", "snapshot.pickle")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no two_devices snapshot: %v", err)
	}
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []int{0, 1} {
		rep := leaksFor(t, s, dev, nil)
		if rep.Device != dev || rep.Entries != len(s.Traces[dev]) || rep.LiveCount == 0 {
			t.Errorf("device %d: report for device %d with %d entries, %d live", dev, rep.Device, rep.Entries, rep.LiveCount)
		}
		for _, g := range rep.Groups {
			if g.Verdict.Kind.Suspicious() {
				t.Errorf("device %d: %q in a run without leaks", dev, g.Verdict)
			}
		}
	}
}
