package compare

import (
	"slices"
	"testing"
)

// TestParseRankPath: the layouts frameworks write one file per rank in.
func TestParseRankPath(t *testing.T) {
	for _, tc := range []struct {
		rel  string
		want RankPath
	}{
		{"memory_snapshot/iteration_10/rank3_memory_snapshot.pickle", RankPath{Rank: 3, HasRank: true, Step: 10, HasStep: true}},
		{"memory_snapshot/iteration_12_exit/rank0_memory_snapshot.pickle", RankPath{Rank: 0, HasRank: true, Step: 12, HasStep: true, Exit: true}},
		{"step_000000000020/000007_step_20.pickle", RankPath{Rank: 7, HasRank: true, Step: 20, HasStep: true}},
		{"step_000000000021/000001_step_21_exit.pickle", RankPath{Rank: 1, HasRank: true, Step: 21, HasStep: true, Exit: true}},
		{"memory_trace_5.pickle", RankPath{Rank: 5, HasRank: true}},
		{"mem/memory_snapshot_rank2_pid4411_1733123456.pickle", RankPath{Rank: 2, HasRank: true}},
		{"snap_rank3_of_8.pickle", RankPath{Rank: 3, HasRank: true, World: 8}},
		{"world16/rank12.pickle.xz", RankPath{Rank: 12, HasRank: true}},
		{"run_ws4_rank1.pkl", RankPath{Rank: 1, HasRank: true, World: 4}},
		{"ddp_rank10.pickle", RankPath{Rank: 10, HasRank: true}},
		{"snapshot.pickle", RankPath{}},
	} {
		if got := ParseRankPath(tc.rel); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.rel, got, tc.want)
		}
	}
	if got := MissingRanks([]int{0, 2, 3}, 6); !slices.Equal(got, []int{1, 4, 5}) {
		t.Errorf("MissingRanks world 6: %v", got)
	}
	if got := MissingRanks([]int{0, 3}, 0); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("MissingRanks no world: %v", got)
	}
	if got := MissingRanks([]int{0}, 0); got != nil {
		t.Errorf("MissingRanks rank 0 alone: %v", got)
	}
}
