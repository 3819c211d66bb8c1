package timeline

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDownsampleMinMax(t *testing.T) {
	tests := []struct {
		name    string
		x       []int64
		buckets int
		keep    []int
		series  [][]int64
		want    []int
	}{
		{name: "empty", want: []int{}},
		{
			name: "short input kept whole", x: []int64{0, 1, 2, 3}, buckets: 2,
			series: [][]int64{{5, 1, 7, 2}}, want: []int{0, 1, 2, 3},
		},
		{
			name: "one bucket keeps ends, min and max", x: []int64{0, 1, 2, 3, 4, 5, 6, 7}, buckets: 1,
			series: [][]int64{{3, 3, 9, 1, 4, 9, 2, 3}}, want: []int{0, 2, 3, 7},
		},
		{
			name: "two buckets", x: []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, buckets: 2,
			series: [][]int64{{0, 5, 1, 1, 1, 1, 1, 8, 0, 1}},
			// bucket 0 = x 0..4: min 0 (i0), max 5 (i1); bucket 1 = x 5..9: min 0 (i8), max 8 (i7)
			want: []int{0, 1, 7, 8, 9},
		},
		{
			name: "second series adds its extremes", x: []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, buckets: 2,
			series: [][]int64{{0, 5, 1, 1, 1, 1, 1, 8, 0, 1}, {1, 1, 1, 9, 1, 1, 1, 1, 1, 0}},
			want:   []int{0, 1, 3, 5, 7, 8, 9}, // 5: first max of b in bucket 1
		},
		{
			name: "keep indices", x: []int64{0, 1, 2, 3, 4, 5, 6, 7}, buckets: 1, keep: []int{5, -1, 99},
			series: [][]int64{{0, 0, 0, 0, 0, 0, 0, 0}}, want: []int{0, 5, 7},
		},
		{
			name: "buckets by x, not by index", x: []int64{0, 1, 2, 3, 4, 5, 6, 100}, buckets: 2,
			// x 0..50 is one bucket holding indices 0-6, x 51..100 holds index 7
			series: [][]int64{{1, 2, 3, 4, 5, 6, 7, 8}}, want: []int{0, 6, 7},
		},
		{
			name: "equal x values", x: []int64{5, 5, 5, 5, 5, 5}, buckets: 2,
			series: [][]int64{{1, 2, 0, 2, 1, 1}}, want: []int{0, 1, 2, 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DownsampleMinMax(tt.x, tt.buckets, tt.keep, tt.series...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("DownsampleMinMax() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDownsampleKeepsExtremes checks on random walks that the result is
// sorted, bounded, and holds every series' global maximum and minimum.
func TestDownsampleKeepsExtremes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		n := 1 + r.IntN(20000)
		x := make([]int64, n)
		a, b := make([]int64, n), make([]int64, n)
		for i := 1; i < n; i++ {
			x[i] = x[i-1] + int64(r.IntN(3))*int64(r.IntN(1000))
			a[i] = a[i-1] + int64(r.IntN(2001)-1000)
			b[i] = max(0, b[i-1]+int64(r.IntN(201)-100))
		}
		buckets := 1 + r.IntN(500)
		got := DownsampleMinMax(x, buckets, nil, a, b)
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("trial %d: indices not sorted and unique", trial)
		}
		if limit := max(n, 4*buckets+2); n > 2*buckets && len(got) > 4*buckets+2 || len(got) > limit {
			t.Errorf("trial %d: kept %d of %d points with %d buckets", trial, len(got), n, buckets)
		}
		for _, s := range [][]int64{a, b} {
			iMax := slices.Index(s, slices.Max(s))
			iMin := slices.Index(s, slices.Min(s))
			if !slices.Contains(got, iMax) || !slices.Contains(got, iMin) {
				t.Errorf("trial %d: global extremes %d, %d not kept", trial, iMin, iMax)
			}
		}
	}
}

// downsampleReference is DownsampleMinMax as first written: one scan of
// every bucket of every series. The block index must pick the same points.
func downsampleReference(x []int64, buckets int, keep []int, series ...[]int64) []int {
	n := len(x)
	if n == 0 {
		return []int{}
	}
	buckets = max(buckets, 1)
	if n <= 2*buckets {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	picked := make([]bool, n)
	picked[0], picked[n-1] = true, true
	for _, k := range keep {
		if k >= 0 && k < n {
			picked[k] = true
		}
	}
	bucketOf := xBuckets(x, buckets)
	for lo := 0; lo < n; {
		b := bucketOf(lo)
		hi := lo + 1
		for hi < n && bucketOf(hi) == b {
			hi++
		}
		for _, s := range series {
			iMin, iMax := lo, lo
			for i := lo + 1; i < hi; i++ {
				if s[i] < s[iMin] {
					iMin = i
				}
				if s[i] > s[iMax] {
					iMax = i
				}
			}
			picked[iMin], picked[iMax] = true, true
		}
		lo = hi
	}
	out := []int{}
	for i, p := range picked {
		if p {
			out = append(out, i)
		}
	}
	return out
}

// TestDownsampleMatchesReference compares the block index with the plain
// scan on random series with plateaus (ties decide "first"), runs of equal
// x and lengths around the block size.
func TestDownsampleMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	sizes := []int{1, 2, 3, mmBlock - 1, mmBlock, mmBlock + 1, 2*mmBlock + 3, 5000, 70000}
	for trial := range 120 {
		n := sizes[trial%len(sizes)]
		if trial >= 2*len(sizes) {
			n = 1 + r.IntN(100000)
		}
		x := make([]int64, n)
		a, b := make([]int64, n), make([]int64, n)
		for i := 1; i < n; i++ {
			x[i] = x[i-1] + int64(r.IntN(3))*int64(r.IntN(50))
			a[i] = a[i-1] + int64(r.IntN(7)-3) // small steps: many ties
			b[i] = b[i-1]
			if r.IntN(10) == 0 {
				b[i] = int64(r.IntN(5))
			}
		}
		buckets := 1 + r.IntN(700)
		keep := []int{r.IntN(n + 2), -1}
		want := downsampleReference(x, buckets, keep, a, b)
		got := DownsampleMinMax(x, buckets, keep, a, b)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("trial %d (n %d, %d buckets): DownsampleMinMax differs from the plain scan (-want +got):\n%s", trial, n, buckets, diff)
		}
		index := make([]int64, n)
		for i := range index {
			index[i] = int64(i)
		}
		ix := newMinMaxIndex([][]int64{a, b}, n)
		if diff := cmp.Diff(downsampleReference(index, buckets, keep, a, b), ix.downsample(n, indexBuckets(n, buckets), buckets, keep)); diff != "" {
			t.Fatalf("trial %d: buckets of entry indexes differ (-want +got):\n%s", trial, diff)
		}
	}
}
