package leaks

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// TestStepsWithoutRecordFunction: on two real H200 recordings made without
// record_function (testdata/gen/gpurec.py; ground truth in .meta.json),
// steps found from the trace alone are the loop's iterations: an eval loop
// over a 4-layer GPT-2 with a KV cache (N prompts of random length, a
// random number of generated tokens each) and a training loop. The marker
// is the allocation made at the loop's first line, and the tensor kept
// every k-th iteration is reported as growing "every k steps".
func TestStepsWithoutRecordFunction(t *testing.T) {
	for _, tc := range []struct{ file, kept string }{
		{"kv_eval", "cache"},
		{"train_norf", "leak"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "snapshots", tc.file+".meta.json"))
			if err != nil {
				t.Fatal(err)
			}
			var meta map[string]json.RawMessage
			if err := json.Unmarshal(data, &meta); err != nil {
				t.Fatal(err)
			}
			var nsteps, stepLine int
			var kept struct {
				File  string `json:"file"`
				Line  int64  `json:"line"`
				Every int    `json:"every"`
			}
			for k, v := range map[string]any{"steps": &nsteps, "step_line": &stepLine, tc.kept: &kept} {
				if err := json.Unmarshal(meta[k], v); err != nil {
					t.Fatalf("meta %s: %v", k, err)
				}
			}
			s := bundledLeak(t, tc.file+".pickle")
			// train_norf has the optimizer's own "Optimizer.step#Adam.step"
			// ranges: find its steps from the allocations too.
			rep := leaksFor(t, s, 0, func(o *LeakOptions) { o.Steps = steps.StepsPattern })
			if rep.Steps.Source != steps.StepsPattern || rep.Steps.Count != nsteps {
				t.Fatalf("%d steps from %v, want %d from the pattern", rep.Steps.Count, rep.Steps.Source, nsteps)
			}
			if !hasFrame(s, rep.Steps.Marker, "gpurec.py", int64(stepLine)) {
				t.Errorf("marker stack %v has no gpurec.py:%d", s.Stack(rep.Steps.Marker), stepLine)
			}
			r := rankOf(s, rep, kept.File, kept.Line)
			if r == 0 {
				t.Fatalf("no group at %s:%d", kept.File, kept.Line)
			}
			g := rep.Groups[r-1]
			want := fmt.Sprintf("every %d steps", kept.Every)
			if g.Verdict.Period != kept.Every || !strings.Contains(g.Verdict.String(), want) {
				t.Errorf("%s:%d: period %d, %q; want %q", kept.File, kept.Line, g.Verdict.Period, g.Verdict, want)
			}
		})
	}
}

// TestPatternStepsOutermost: the step marker is the outermost repeating
// unit, not the count most repeating stacks share. Each of 9 steps makes
// an input batch, then 1 + n (varying) forward passes of 4 layers, each
// layer allocating from three stacks (as a model's layers share their
// code); a result is kept every 3rd step and never freed.
func TestPatternStepsOutermost(t *testing.T) {
	b := newLeakTrace()
	input := b.stack("eval.py:20 main")
	logits := b.stack("model.py:90 forward", "eval.py:25 main")
	layer := []snapshot.StackID{
		b.stack("model.py:40 attn", "model.py:80 forward", "eval.py:25 main"),
		b.stack("model.py:50 mlp", "model.py:80 forward", "eval.py:25 main"),
		b.stack("model.py:60 norm", "model.py:80 forward", "eval.py:25 main"),
	}
	keep := b.stack("eval.py:30 main")
	tokens := []int{3, 7, 2, 5, 8, 3, 6, 2, 4}
	for step, n := range tokens {
		in := b.alloc(10, input)
		for range 1 + n {
			for range 4 {
				for _, l := range layer {
					b.free(b.alloc(10, l))
				}
			}
			b.free(b.alloc(10, logits))
		}
		if step%3 == 2 {
			b.alloc(10, keep)
		}
		b.free(in)
	}
	s := b.snapshot()
	stack, starts := steps.FindPattern(s.Traces[0])
	if stack != input || len(starts) != len(tokens) {
		t.Errorf("marker %v with %d steps, want the input batch %v with %d", s.Stack(stack), len(starts), s.Stack(input), len(tokens))
	}
	rep := leaksFor(t, s, 0, nil)
	r := rankOf(s, rep, "eval.py", 30)
	if r == 0 || !strings.Contains(rep.Groups[r-1].Verdict.String(), "every 3 steps") {
		t.Errorf("kept every 3rd step: %v", rep.Groups)
	}
}
