package compare

import (
	"slices"
	"testing"

	"github.com/snapview/snapview/analyze/stats"
)

func TestRankNumber(t *testing.T) {
	tests := []struct {
		path string
		n    int
		ok   bool
	}{
		{"run/ddp_rank1.pickle", 1, true},
		{"rk/rank10.pickle", 10, true},
		{"RANK_03.pickle.xz", 3, true},
		{"rank7/rank-2.pickle", 2, true}, // the base name's
		{"rank7/snapshot.pickle", 0, false},
		{"mlp_train.pickle", 0, false},
	}
	for _, tc := range tests {
		n, ok := RankNumber(tc.path)
		if n != tc.n || ok != tc.ok {
			t.Errorf("RankNumber(%q) = %d, %v; want %d, %v", tc.path, n, ok, tc.n, tc.ok)
		}
	}
}

// TestCompareRanksLeavesOutUnknown: a side whose peaks are unknown (a file
// with no trace) takes no part in min/median/max, the flags or the peak
// timing: the rank with the smallest figure here is unknown and must not
// be the min or the median.
func TestCompareRanksLeavesOutUnknown(t *testing.T) {
	side := func(file string, peak int64, h stats.Exactness, step int) *Side {
		s := &Side{File: file, PeakAllocated: peak, PeakReserved: peak, ReservedAtPeakAllocated: peak,
			PeakAllocatedAt: 5, PeakAllocatedStep: step, PeakReservedStep: step}
		s.Stats.Known.History = h
		return s
	}
	sides := []*Side{
		side("state_only.pickle", 10, stats.Unknown, -1),
		side("rank0.pickle", 100, stats.Exact, 3),
		side("rank1.pickle", 104, stats.Exact, 3),
		side("rank2.pickle", 200, stats.Exact, 3),
	}
	rk := CompareRanks(sides, 0)
	if !slices.Equal(rk.Unknown, []int{0}) {
		t.Errorf("Unknown = %v, want [0]", rk.Unknown)
	}
	sp := rk.Spreads[0]
	if sp.MinRank != 1 || sp.Min != 100 || sp.MedianRank != 2 || sp.MaxRank != 3 {
		t.Errorf("peak allocated spread = %+v: the unknown rank 0 must be left out", sp)
	}
	for _, o := range rk.Outliers {
		if o.Rank == 0 {
			t.Errorf("the unknown rank is flagged: %+v", o)
		}
	}
	if rk.PeaksApart {
		t.Error("PeaksApart: the known ranks' peaks fall in the same step")
	}
	rk = CompareRanks(sides[:1], 0)
	if len(rk.Spreads) != 0 || rk.Median != -1 || rk.Diff != nil {
		t.Errorf("only unknown ranks: spreads %v, median %d", rk.Spreads, rk.Median)
	}
}
