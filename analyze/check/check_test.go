package check

import (
	"testing"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

func fig(key string, v int64, e stats.Exactness) stats.Figure {
	return stats.Figure{Key: key, Value: v, Exactness: e}
}

// TestRunIntervals checks that a verdict holds over everything a lower
// bound or an unknown figure allows, never at one end only.
func TestRunIntervals(t *testing.T) {
	const key = "reserved_bytes.all.peak"
	ex, lb, un := stats.Exact, stats.LowerBound, stats.Unknown
	tests := []struct {
		name      string
		rule      Rule
		value     stats.Figure
		base      *stats.Figure
		want      Verdict
		wantBound int64
	}{
		{"exact under", Rule{Kind: Max, Key: key, Limit: 100}, fig(key, 100, ex), nil, Pass, 100},
		{"exact over", Rule{Kind: Max, Key: key, Limit: 100}, fig(key, 101, ex), nil, Fail, 100},
		{"lower bound under", Rule{Kind: Max, Key: key, Limit: 100}, fig(key, 50, lb), nil, Unknown, 100},
		{"lower bound over", Rule{Kind: Max, Key: key, Limit: 100}, fig(key, 150, lb), nil, Fail, 100},
		{"unknown", Rule{Kind: Max, Key: key, Limit: 100}, fig(key, 0, un), nil, Unknown, 100},
		{"growth within", Rule{Kind: MaxGrowth, Key: key, Percent: 10}, fig(key, 110, ex), &stats.Figure{Key: key, Value: 100, Exactness: ex}, Pass, 110},
		{"growth over", Rule{Kind: MaxGrowth, Key: key, Percent: 10}, fig(key, 111, ex), &stats.Figure{Key: key, Value: 100, Exactness: ex}, Fail, 110},
		// The baseline is at least 100: the allowed bound is at least 110,
		// so 105 passes whatever the true baseline; 200 may or may not.
		{"base lower bound, pass", Rule{Kind: MaxGrowth, Key: key, Percent: 10}, fig(key, 105, ex), &stats.Figure{Key: key, Value: 100, Exactness: lb}, Pass, 0},
		{"base lower bound, open", Rule{Kind: MaxGrowth, Key: key, Percent: 10}, fig(key, 200, ex), &stats.Figure{Key: key, Value: 100, Exactness: lb}, Unknown, 0},
		{"percent of base", Rule{Kind: Max, Key: key, Percent: 50, IsPercent: true}, fig(key, 60, ex), &stats.Figure{Key: key, Value: 100, Exactness: ex}, Fail, 50},
		// Retries the trace bounds from both sides (1 to 3): the
		// baseline's upper bound closes the allowed bound too, so 7
		// fails 3 + 100% whatever the true counts.
		{"retries interval under", Rule{Kind: Max, Key: "num_alloc_retries", Limit: 3}, stats.Figure{Key: "num_alloc_retries", Value: 1, Max: 3, Exactness: lb}, nil, Pass, 3},
		{"retries interval open", Rule{Kind: Max, Key: "num_alloc_retries", Limit: 2}, stats.Figure{Key: "num_alloc_retries", Value: 1, Max: 3, Exactness: lb}, nil, Unknown, 2},
		{"retries base interval, fail", Rule{Kind: MaxGrowth, Key: "num_alloc_retries", Percent: 100}, fig("num_alloc_retries", 7, ex), &stats.Figure{Key: "num_alloc_retries", Value: 1, Max: 3, Exactness: lb}, Fail, 0},
		{"retries base interval, open", Rule{Kind: MaxGrowth, Key: "num_alloc_retries", Percent: 100}, fig("num_alloc_retries", 5, ex), &stats.Figure{Key: "num_alloc_retries", Value: 1, Max: 3, Exactness: lb}, Unknown, 0},
		{"no oom", Rule{Kind: NoOOM}, fig("num_ooms", 0, ex), nil, Pass, 0},
		{"oom lower bound above 0", Rule{Kind: NoOOM}, fig("num_ooms", 1, lb), nil, Fail, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Figures: Figures{tt.value.Key: tt.value}}
			var b *Baseline
			if tt.base != nil {
				b = &Baseline{Figures: Figures{tt.base.Key: *tt.base}}
			}
			res, err := Run([]Rule{tt.rule}, in, b)
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Verdict != tt.want || res[0].Bound != tt.wantBound {
				t.Errorf("verdict %v bound %d, want %v bound %d", res[0].Verdict, res[0].Bound, tt.want, tt.wantBound)
			}
			if res[0].Verdict == Unknown && res[0].Why == "" {
				t.Error("an unknown verdict without a reason")
			}
		})
	}
	if _, err := Run([]Rule{{Kind: MaxGrowth, Key: key, Percent: 1}}, Input{Figures: Figures{key: fig(key, 1, ex)}}, nil); err == nil {
		t.Error("a growth rule without a baseline gave no error")
	}
}

func TestSameRequests(t *testing.T) {
	e := func(a snapshot.Action, size int64) snapshot.TraceEntry {
		return snapshot.TraceEntry{Action: a, Size: size}
	}
	a := []snapshot.TraceEntry{e(snapshot.ActionSegmentAlloc, 2<<20), e(snapshot.ActionAlloc, 512), e(snapshot.ActionAlloc, 1024)}
	b := []snapshot.TraceEntry{e(snapshot.ActionAlloc, 512), e(snapshot.ActionFreeRequested, 512), e(snapshot.ActionAlloc, 1024)}
	c := []snapshot.TraceEntry{e(snapshot.ActionAlloc, 512)}
	if !SameRequests(a, b) || SameRequests(a, c) || SameRequests(c, a) {
		t.Error("SameRequests compares the alloc sizes in order, other entries aside")
	}
}
