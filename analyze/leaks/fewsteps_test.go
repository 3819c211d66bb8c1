package leaks

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// TestLeaksFewPatternSteps runs the leak ranking on real files: where the
// steps are a few repetitions of one allocation (public p32's device 2:
// three allocations at models.py:117 0.09-0.15 s apart in a 0.876 s trace
// of a DataParallel worker, a loop inside one forward pass) a growing
// stack's verdict must not say "likely leak"; the planted leaks of the
// recordings (steps from a record_function range or from 12 or more
// repetitions of the input batch) keep their leak verdicts.
func TestLeaksFewPatternSteps(t *testing.T) {
	corpus := Corpus(t)
	testdata := filepath.Join("..", "..", "testdata", "snapshots")
	tests := []struct {
		path   string
		device int
		// few: the steps are too few repetitions of one allocation.
		few bool
	}{
		{filepath.Join(corpus, "public", "p32-3dev-expandable-oom.pickle"), 2, true},
		{filepath.Join(corpus, "torch2.11", "leak_train", "snapshot.pickle"), 0, false},
		{filepath.Join(testdata, "leak_cache.pickle"), 0, false},
		{filepath.Join(testdata, "leak_cycle.pickle"), 0, false},
		{filepath.Join(testdata, "leak_bounded.pickle"), 0, false},
		{filepath.Join(testdata, "leak_gc_oom.pickle"), 0, false},
		{filepath.Join(testdata, "monitor_train.pickle"), 0, false},
		{filepath.Join(testdata, "train_norf.pickle"), 0, false},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(filepath.Dir(tt.path))+"/"+filepath.Base(tt.path), func(t *testing.T) {
			s, err := snapshot.Load(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := replay.Run(s, tt.device, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Leaks(s, res, DefaultLeakOptions(res))
			if err != nil {
				t.Fatal(err)
			}
			if got := rep.Steps.TooFewPatternSteps(); got != tt.few {
				t.Fatalf("steps %+v: TooFewPatternSteps %v, want %v", rep.Steps, got, tt.few)
			}
			if rep.Steps.JudgesGrowth() == tt.few {
				t.Errorf("steps %+v: JudgesGrowth %v, want %v", rep.Steps, !tt.few, tt.few)
			}
			suspicious := 0
			for _, g := range rep.Groups {
				k := g.Verdict.Kind
				if k != VerdictLeak && k != VerdictSawtooth && k != VerdictPossible {
					continue
				}
				suspicious++
				text := g.Verdict.String()
				if tt.few && (strings.Contains(text, "likely leak") || strings.Contains(text, "possible leak") ||
					!strings.Contains(text, "a loop inside one pass")) {
					t.Errorf("group %d: %q over %d repetitions of one allocation", g.Rank, text, rep.Steps.Count)
				}
				if !tt.few && strings.Contains(text, "loop inside one pass") {
					t.Errorf("group %d: %q over %d %s steps", g.Rank, text, rep.Steps.Count, rep.Steps.Source)
				}
			}
			if suspicious == 0 {
				t.Errorf("no group grew: the file's growing stacks were lost")
			}
		})
	}
}

// TestJudgesGrowth: a record_function range always judges growth, a
// repeating allocation from steps.MinPatternSteps repetitions, equal
// slices never.
func TestJudgesGrowth(t *testing.T) {
	for _, tt := range []struct {
		st   steps.Steps
		want bool
	}{
		{steps.Steps{Source: steps.StepsAnnotation, Count: 3}, true},
		{steps.Steps{Source: steps.StepsPattern, Count: 3}, false},
		{steps.Steps{Source: steps.StepsPattern, Count: steps.MinPatternSteps - 1}, false},
		{steps.Steps{Source: steps.StepsPattern, Count: steps.MinPatternSteps}, true},
		{steps.Steps{Source: steps.StepsSlices, Count: 20}, false},
		{steps.Steps{Source: steps.StepsNone}, false},
	} {
		if got := tt.st.JudgesGrowth(); got != tt.want {
			t.Errorf("%+v: JudgesGrowth %v, want %v", tt.st, got, tt.want)
		}
	}
}
