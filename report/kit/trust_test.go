package kit

import (
	"testing"

	"github.com/snapview/snapview/analyze/stats"
)

// TestFigureValueMax: a lower bound that the input also bounds from above
// is "LO to HI"; every other figure keeps FigureValue's mark.
func TestFigureValueMax(t *testing.T) {
	for _, tt := range []struct {
		v, hi int64
		bytes bool
		e     stats.Exactness
		want  string
	}{
		{1, 3, false, stats.LowerBound, "1 to 3"},
		{0, 1, false, stats.LowerBound, "0 to 1"},
		{1200, 4500, false, stats.LowerBound, "1,200 to 4,500"},
		{1 << 20, 3 << 20, true, stats.LowerBound, "1.0 MiB to 3.0 MiB"},
		{1, 0, false, stats.LowerBound, "1+"},
		{3, 3, false, stats.LowerBound, "3+"},
		{3, 5, false, stats.Exact, "3"},
		{3, 5, false, stats.Unknown, "?"},
	} {
		if got := FigureValueMax(tt.v, tt.hi, tt.bytes, tt.e); got != tt.want {
			t.Errorf("FigureValueMax(%d, %d, %v, %v) = %q, want %q", tt.v, tt.hi, tt.bytes, tt.e, got, tt.want)
		}
	}
}

// TestRetriesValue: num_alloc_retries as summary's torch header, ranks
// and check write it (stats.MemoryStats.RetriesRange).
func TestRetriesValue(t *testing.T) {
	exact := stats.Known{History: stats.Exact, NumAllocRetries: stats.Exact}
	bounded := stats.Known{History: stats.Exact, NumAllocRetries: stats.LowerBound}
	late := stats.Known{History: stats.LowerBound, NumAllocRetries: stats.LowerBound}
	for _, tt := range []struct {
		st   stats.MemoryStats
		want string
	}{
		{stats.MemoryStats{NumAllocRetries: 1, NumAllocRetriesMax: 3, Known: bounded}, "1 to 3"},
		{stats.MemoryStats{NumAllocRetries: 1, NumAllocRetriesMax: 3, Known: late}, "1+"},
		{stats.MemoryStats{NumAllocRetries: 2, NumAllocRetriesMax: 2, Known: bounded}, "2+"},
		{stats.MemoryStats{NumAllocRetries: 2, Known: exact}, "2"},
	} {
		if got := RetriesValue(&tt.st); got != tt.want {
			t.Errorf("RetriesValue(%d, max %d, %+v) = %q, want %q", tt.st.NumAllocRetries, tt.st.NumAllocRetriesMax, tt.st.Known, got, tt.want)
		}
	}
}
