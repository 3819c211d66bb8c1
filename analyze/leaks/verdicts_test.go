package leaks

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/steps"

	"github.com/snapview/snapview/snapshot"
)

// TestVerdictEarlyWording checks that the at-start and reused verdicts
// say when the kept bytes were allocated in terms of steps, never "at
// start", and claim parameters only for groups never freed.
func TestVerdictEarlyWording(t *testing.T) {
	step := Verdict{Kind: VerdictAtStart, PerStep: true}
	slice := Verdict{Kind: VerdictAtStart}
	with := func(v Verdict, edit func(*Verdict)) Verdict { edit(&v); return v }
	tests := []struct {
		v    Verdict
		want string
	}{
		{with(step, func(v *Verdict) {}), "allocated before the first step, never freed: parameters/state"},
		{with(step, func(v *Verdict) { v.From, v.Step = 1, 1 }), "allocated in the first step, never freed: parameters/state"},
		{with(step, func(v *Verdict) { v.From, v.Step = 0, 1 }), "allocated before or in the first step, never freed: parameters/state"},
		{with(step, func(v *Verdict) { v.From, v.Step = 0, 2 }), "allocated before the first step to step 2, never freed: parameters/state"},
		{with(step, func(v *Verdict) { v.From, v.Step = 2, 3 }), "allocated in steps 2 to 3, never freed: parameters/state"},
		{with(step, func(v *Verdict) { v.From, v.Step = 2, 2 }), "allocated in step 2, never freed: parameters/state"},
		{with(step, func(v *Verdict) { v.Freed = true }), "allocated before the first step and kept (the stack's other allocations were freed): not growing"},
		{with(step, func(v *Verdict) { v.From, v.Step, v.Mostly = 1, 1, true }), "mostly allocated in the first step and kept, the rest later: not growing steadily"},
		{with(slice, func(v *Verdict) { v.From, v.Step = 1, 1 }), "allocated in the first slice of the trace, never freed: parameters/state"},
		{with(slice, func(v *Verdict) { v.From, v.Step = 1, 2 }), "allocated in the first 2 slices of the trace, never freed: parameters/state"},
		{with(slice, func(v *Verdict) { v.From, v.Step = 2, 2 }), "allocated in slice 2 of the trace, never freed: parameters/state"},
		{Verdict{Kind: VerdictReused, PerStep: true}, "freed and reallocated every step: a per-step working set, not a leak"},
		{Verdict{Kind: VerdictReused, PerStep: true, Early: true}, "freed and reallocated every step, the live ones allocated before the first step: a per-step working set, not a leak"},
		{Verdict{Kind: VerdictReused, PerStep: true, Mostly: true, From: 1, Step: 1}, "freed and reallocated every step, most live bytes allocated in the first step: a per-step working set, not a leak"},
		{Verdict{Kind: VerdictReused}, "freed and reallocated in every slice of the trace: a per-slice working set, not a leak"},
		{Verdict{Kind: VerdictFewSteps, PerStep: true, Slices: 1}, "the trace has 1 step: too few to see growth"},
		{Verdict{Kind: VerdictFewSteps, Slices: 2}, "the trace has 2 slices: too few to see growth"},
	}
	for _, tt := range tests {
		if got := tt.v.String(); got != tt.want {
			t.Errorf("%+v:\n got %q\nwant %q", tt.v, got, tt.want)
		}
	}
}

// TestLeaksEarlyAndReused runs a training loop of ProfilerStep#N steps
// whose parameters come before the first step, the optimizer state in the
// first, a workspace before the first step next to a temporary of the
// same stack freed every step, and a batch freed every step.
func TestLeaksEarlyAndReused(t *testing.T) {
	b := newLeakTrace()
	st := map[string]snapshot.StackID{
		"params": b.stack("/home/x/train.py:10 main"),
		"state":  b.stack("/venv/lib/python3.11/site-packages/torch/optim/adam.py:178 _init_group", "/home/x/train.py:30 main"),
		"ws":     b.stack("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py:134 forward", "/home/x/model.py:8 forward"),
		"batch":  b.stack("/home/x/train.py:20 main"),
		"leak":   b.stack("/home/x/train.py:25 main"),
	}
	b.alloc(10, st["params"])
	b.alloc(12, st["params"])
	b.alloc(32, st["ws"])
	for step := range 12 {
		b.annotate("START", "ProfilerStep#"+strconv.Itoa(step))
		x := b.alloc(10, st["batch"])
		tmp := b.alloc(10, st["ws"])
		b.alloc(10, st["leak"])
		if step == 0 {
			b.alloc(10, st["state"])
			b.alloc(12, st["state"])
		}
		b.free(tmp)
		if step < 11 {
			b.free(x)
		}
	}
	s := b.snapshot()
	rep := leaksFor(t, s, 0, nil)
	if rep.Steps.Source != steps.StepsAnnotation || !rep.Steps.Prologue || rep.Steps.Count != 12 {
		t.Fatalf("steps %+v, want 12 ProfilerStep#N steps after a prologue", rep.Steps)
	}
	for _, tt := range []struct {
		stack string
		kind  VerdictKind
		text  string
	}{
		{"params", VerdictAtStart, "allocated before the first step, never freed: parameters/state"},
		{"state", VerdictAtStart, "allocated in the first step, never freed: parameters/state"},
		{"ws", VerdictReused, "freed and reallocated every step, the live ones allocated before the first step: a per-step working set, not a leak"},
		{"batch", VerdictInFlight, "allocated in the last step: in use at this moment, probably not a leak"},
		{"leak", VerdictLeak, "grows every step, never freed: likely leak"},
	} {
		g := groupOf(rep, st[tt.stack])
		if g == nil {
			t.Errorf("%s: no group", tt.stack)
			continue
		}
		if g.Verdict.Kind != tt.kind || g.Verdict.String() != tt.text {
			t.Errorf("%s: %v %q, want %v %q", tt.stack, g.Verdict.Kind, g.Verdict, tt.kind, tt.text)
		}
		if g.Verdict.Kind.Suspicious() != (g.Score > 0) {
			t.Errorf("%s: score %v with verdict %v", tt.stack, g.Score, g.Verdict.Kind)
		}
	}
}

// TestLeaksLeakTrainVerdicts checks the verdicts the real leak_train
// snapshot showed wrong: the output of the last linear layer (snapgen.py:163),
// freed and reallocated every step next to the cuBLAS workspace allocated
// before the first step, is a working set, not parameters; the parameters
// (:166) were allocated before the first step and never freed.
func TestLeaksLeakTrainVerdicts(t *testing.T) {
	s, err := snapshot.Load(filepath.Join(Corpus(t), "torch2.11", "leak_train", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	rep := leaksFor(t, s, 0, nil)
	if r := rankOf(s, rep, "snapgen.py", 163); r == 0 {
		t.Error("no group of snapgen.py:163")
	} else if g := rep.Groups[r-1]; g.Verdict.Kind != VerdictReused || strings.Contains(g.Verdict.String(), "parameters") {
		t.Errorf("snapgen.py:163: %v %q, want reused", g.Verdict.Kind, g.Verdict)
	}
	if r := rankOf(s, rep, "snapgen.py", 166); r == 0 {
		t.Error("no group of snapgen.py:166")
	} else if g := rep.Groups[r-1]; g.Verdict.String() != "allocated before the first step, never freed: parameters/state" {
		t.Errorf("parameters: %q", g.Verdict)
	}
}

// TestLeaksTwoDevicesAdamState checks that the Adam state, allocated in
// the first of three steps near the end of the trace, says so.
func TestLeaksTwoDevicesAdamState(t *testing.T) {
	path := filepath.Join(Corpus(t), "torch2.11", "two_devices", "snapshot.pickle")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no two_devices snapshot: %v", err)
	}
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rep := leaksFor(t, s, 0, nil)
	r := rankOf(s, rep, "adam.py", 178)
	if r == 0 {
		t.Fatal("no group of adam.py:178")
	}
	if g := rep.Groups[r-1]; g.Verdict.String() != "allocated in the first step, never freed: parameters/state" {
		t.Errorf("Adam state: %v %q", g.Verdict.Kind, g.Verdict)
	}
}
