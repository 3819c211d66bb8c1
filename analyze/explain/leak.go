package explain

import (
	"math"

	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// leakFinding is the leak ranking's verdict in one finding:
//
//   - steps found (a record_function range or a repeating allocation): the
//     top group whose verdict is a leak (likely or possible), or "no leak"
//     when none is: every other stack returns to its level step after step;
//   - no steps (equal slices of the trace): growth cannot be judged;
//     the stack that grew most steadily over the slices is named, as
//     growth within one long step (a forward pass) looks the same;
//   - steps from a repeating allocation, fewer than
//     steps.MinPatternSteps of them ([steps.Steps.JudgesGrowth]): a leak
//     verdict cannot stand on them either (they may be a loop inside one
//     pass): growth cannot be judged, the stack that grew is named.
//     "No leak" still stands on them: stacks that return to their level
//     at every repetition do not grow, whatever the repetitions are.
//
// Figures are leaks --json's: the group's bytes, count and score, the
// device's live bytes, the number of steps.
func leakFinding(in Input) (Finding, bool) {
	rep := in.Leaks
	if rep == nil || rep.Entries <= 1 {
		return Finding{}, false
	}
	hist := rep.History.History
	perStep := rep.Steps.Source == steps.StepsAnnotation || rep.Steps.Source == steps.StepsPattern
	judged := rep.Steps.JudgesGrowth()
	var top *leaks.LeakGroup
	for k := range rep.Groups {
		g := &rep.Groups[k]
		switch g.Verdict.Kind {
		case leaks.VerdictLeak, leaks.VerdictSawtooth, leaks.VerdictPossible:
		default:
			continue
		}
		if top == nil || g.Score > top.Score {
			top = g
		}
	}
	f := Finding{Entry: rep.At}
	f.add("steps", int64(rep.Steps.Count), Count, stats.Exact)
	f.add("live_bytes", rep.LiveBytes, Bytes, stats.Exact)
	suspicious := 0
	for k := range rep.Groups {
		g := &rep.Groups[k]
		if g != top && (g.Verdict.Kind == leaks.VerdictLeak || g.Verdict.Kind == leaks.VerdictSawtooth ||
			g.Verdict.Kind == leaks.VerdictPossible) {
			suspicious++
			if top != nil && len(f.Stacks) < 3 {
				f.Stacks = append(f.Stacks, g.Stack)
			}
		}
	}
	switch {
	case top != nil && !judged:
		// Growth over equal slices of a trace without steps, or over a
		// few repetitions of one allocation, cannot be told from one
		// long step (a forward pass that OOMs): the finding names the
		// stack that grew and says so.
		f.Kind, f.Severity = KindGrowthUnjudged, SeverityInfo
		f.Note = "grew"
		f.Stacks = []snapshot.StackID{top.Stack}
		f.add("bytes", top.Bytes, Bytes, stats.Exact)
		f.add("count", int64(top.Count), Count, stats.Exact)
	case top != nil:
		f.Kind, f.Severity = KindLeak, SeverityWarning
		f.Note = top.Verdict.String()
		f.Stacks = append([]snapshot.StackID{top.Stack}, f.Stacks...)
		f.add("other_suspicious_groups", int64(suspicious), Count, hist)
		f.add("rank", int64(top.Rank), Count, stats.Exact)
		f.add("bytes", top.Bytes, Bytes, stats.Exact)
		f.add("count", int64(top.Count), Count, stats.Exact)
		f.add("score", int64(math.Round(top.Score)), Bytes, hist)
		f.add("growth_steps", int64(top.GrowthSteps), Count, hist)
		f.add("first_alloc_entry", int64(top.FirstAlloc), Entry, stats.Exact)
	case perStep:
		f.Kind, f.Severity = KindNoLeak, SeverityInfo
		if rep.Steps.Source == steps.StepsPattern && rep.Steps.Marker > 0 {
			f.Stacks = []snapshot.StackID{rep.Steps.Marker}
		}
		if rep.Seeded {
			f.Note = "seeded"
		}
	default:
		f.Kind, f.Severity = KindGrowthUnjudged, SeverityInfo
	}
	f.Steps = rep.Steps
	return f, true
}
