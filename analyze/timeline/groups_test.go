package timeline

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStackTimeline(t *testing.T) {
	// Five entries: A(100, stack 1) alloc; B(50, stack 2) alloc; C(10,
	// stack 3) alloc; free A; free B. D(7, stack 3) was live before the
	// trace and never freed.
	in := StackTimelineInput{
		TimeUS:    []int64{1000, 1010, 1030, 1060, 1100},
		Allocated: []int64{107, 157, 167, 67, 17},
		Active:    []int64{107, 157, 167, 67, 17},
		Reserved:  []int64{200, 200, 200, 200, 200},
		Ranges: []LiveRange{
			{Start: 0, End: 3, Bytes: 100, Stack: 1},
			{Start: 1, End: 4, Bytes: 50, Stack: 2},
			{Start: 2, End: 5, Bytes: 10, Stack: 3},
			{Start: -1, End: 5, Bytes: 7, Stack: 3},
		},
		Peak: 2,
	}
	tests := []struct {
		name string
		opt  StackTimelineOptions
		want *Timeline
	}{
		{
			name: "two groups and other",
			opt:  StackTimelineOptions{Groups: 2, Buckets: 100},
			want: &Timeline{
				Entries: 5, XIsTime: true,
				Index: []int{0, 1, 2, 3, 4}, X: []int64{0, 10, 30, 60, 100},
				Allocated: in.Allocated, Active: in.Active, Reserved: in.Reserved,
				PeakPoint: 2,
				Groups: []TimelineGroup{
					{Stack: 1, Stacks: 1, Count: 1, PeakBytes: 100, MaxBytes: 100, Area: 100 * 60, Bytes: []int64{100, 100, 100, 0, 0}},
					{Stack: 2, Stacks: 1, Count: 1, PeakBytes: 50, MaxBytes: 50, Area: 50 * 90, Bytes: []int64{0, 50, 50, 50, 0}},
					{Other: true, Stacks: 1, Count: 2, PeakBytes: 17, MaxBytes: 17, Area: 10*70 + 7*100, Bytes: []int64{7, 7, 17, 17, 17}},
				},
			},
		},
		{
			name: "one bucket keeps ends, extremes and the peak",
			opt:  StackTimelineOptions{Groups: 5, Buckets: 1},
			want: &Timeline{
				Entries: 5, XIsTime: true,
				Index: []int{0, 2, 4}, X: []int64{0, 30, 100},
				Allocated: []int64{107, 167, 17}, Active: []int64{107, 167, 17}, Reserved: []int64{200, 200, 200},
				PeakPoint: 1,
				Groups: []TimelineGroup{
					{Stack: 1, Stacks: 1, Count: 1, PeakBytes: 100, MaxBytes: 100, Area: 100 * 60, Bytes: []int64{100, 100, 0}},
					{Stack: 2, Stacks: 1, Count: 1, PeakBytes: 50, MaxBytes: 50, Area: 50 * 90, Bytes: []int64{0, 50, 0}},
					{Stack: 3, Stacks: 1, Count: 2, PeakBytes: 17, MaxBytes: 17, Area: 10*70 + 7*100, Bytes: []int64{7, 17, 17}},
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := StackTimeline(in, tt.opt)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("StackTimeline() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStackTimelineIndexAxis(t *testing.T) {
	got := StackTimeline(StackTimelineInput{
		Allocated: []int64{1, 2}, Active: []int64{1, 2}, Reserved: []int64{2, 2},
		Ranges: []LiveRange{{Start: 0, End: 2, Bytes: 1, Stack: 4}, {Start: 1, End: 2, Bytes: 1, Stack: 0}},
		Peak:   1,
	}, StackTimelineOptions{Groups: 10, Buckets: 10})
	if got.XIsTime || !cmp.Equal(got.X, []int64{0, 1}) {
		t.Errorf("x axis = %v (time %v), want entry indices", got.X, got.XIsTime)
	}
	if got.Groups[0].Stack != 4 {
		t.Errorf("first group stack = %d, want 4 (larger area at equal peak bytes)", got.Groups[0].Stack)
	}
}

func TestStackTimelineEmpty(t *testing.T) {
	got := StackTimeline(StackTimelineInput{}, StackTimelineOptions{})
	want := &Timeline{PeakPoint: -1, Index: []int{}, X: []int64{}, Allocated: []int64{}, Active: []int64{}, Reserved: []int64{}, Groups: []TimelineGroup{}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("StackTimeline(empty) mismatch (-want +got):\n%s", diff)
	}
}

// TestPointIndex checks pointIndex.first against slices.BinarySearch.
func TestPointIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 100, 3000} {
		seen := map[int]bool{}
		var points []int
		for len(points) < n {
			// Clusters and gaps, as min-max downsampling keeps them.
			v := rng.IntN(1 << 20)
			if rng.IntN(3) == 0 {
				v = rng.IntN(2000)
			}
			if !seen[v] {
				seen[v] = true
				points = append(points, v)
			}
		}
		slices.Sort(points)
		x := newPointIndex(points)
		for _, i := range append([]int{-5, 0, 1, 1 << 20, 1<<20 + 5}, points...) {
			for _, d := range []int{-1, 0, 1} {
				want, _ := slices.BinarySearch(points, i+d)
				if got := x.first(i + d); got != want {
					t.Fatalf("n=%d: first(%d) = %d, want %d", n, i+d, got, want)
				}
			}
		}
	}
}
