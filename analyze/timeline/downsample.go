package timeline

import (
	"slices"
	"sort"
)

// DownsampleMinMax picks the points of a long series to draw so that its
// shape and its extremes survive: it splits the x range into at most
// buckets equal-width buckets and keeps, in each, the index of the first
// minimum and the first maximum of every series. It also keeps the first
// and the last index and every index in keep (the peak, OOMs; indices out
// of range are ignored).
//
// x must be non-decreasing (times, or entry indices); every series must
// have len(x) elements. The result is sorted and without duplicates. When
// len(x) <= 2*buckets every index is kept, and buckets < 1 means 1.
//
// Because the global maximum of a series is the first maximum of its
// bucket, it is always kept; so is the global minimum.
//
// It costs one pass over the series (to summarise them in blocks) and then
// time in the number of buckets, not in len(x); a caller that picks from
// the same series several times keeps a [minMaxIndex] instead.
func DownsampleMinMax(x []int64, buckets int, keep []int, series ...[]int64) []int {
	return newMinMaxIndex(series, len(x)).downsample(len(x), xBuckets(x, buckets), buckets, keep)
}

// mmBlock is the number of entries a minMaxIndex summarises in one block.
const mmBlock = 256

// minMaxIndex answers, for series of equal length n, "the first minimum
// and the first maximum of series k over entries [lo, hi)" by scanning at
// most two partial blocks and the summaries of the whole blocks between
// them: O(hi-lo) / mmBlock + mmBlock instead of O(hi-lo).
type minMaxIndex struct {
	series [][]int64
	n      int
	// minAt[k][j] and maxAt[k][j] are the first minimum and the first
	// maximum of series k in block j (entries [j*mmBlock, (j+1)*mmBlock)).
	minAt, maxAt [][]int32
}

// newMinMaxIndex summarises series (each of n elements, n < 2^31) in
// blocks of mmBlock entries.
func newMinMaxIndex(series [][]int64, n int) *minMaxIndex {
	ix := &minMaxIndex{series: series, n: n}
	nb := (n + mmBlock - 1) / mmBlock
	for _, s := range series {
		mins, maxs := make([]int32, nb), make([]int32, nb)
		for j := range nb {
			lo, hi := j*mmBlock, min((j+1)*mmBlock, n)
			iMin, iMax := lo, lo
			vMin, vMax := s[lo], s[lo]
			for i := lo + 1; i < hi; i++ {
				v := s[i]
				if v < vMin {
					vMin, iMin = v, i
				}
				if v > vMax {
					vMax, iMax = v, i
				}
			}
			mins[j], maxs[j] = int32(iMin), int32(iMax)
		}
		ix.minAt = append(ix.minAt, mins)
		ix.maxAt = append(ix.maxAt, maxs)
	}
	return ix
}

// minMax returns the first minimum and the first maximum of series k over
// entries [lo, hi), lo < hi.
func (ix *minMaxIndex) minMax(k, lo, hi int) (iMin, iMax int) {
	s := ix.series[k]
	iMin, iMax = lo, lo
	scan := func(a, b int) {
		vMin, vMax := s[iMin], s[iMax]
		for i := a; i < b; i++ {
			v := s[i]
			if v < vMin {
				vMin, iMin = v, i
			}
			if v > vMax {
				vMax, iMax = v, i
			}
		}
	}
	jLo := (lo + mmBlock - 1) / mmBlock // first whole block
	jHi := hi / mmBlock                 // one past the last whole block
	if jHi <= jLo {
		scan(lo+1, hi)
		return iMin, iMax
	}
	scan(lo+1, jLo*mmBlock)
	mins, maxs := ix.minAt[k], ix.maxAt[k]
	for j := jLo; j < jHi; j++ {
		if a := int(mins[j]); s[a] < s[iMin] {
			iMin = a
		}
		if a := int(maxs[j]); s[a] > s[iMax] {
			iMax = a
		}
	}
	scan(jHi*mmBlock, hi)
	return iMin, iMax
}

// xBuckets returns DownsampleMinMax's bucket of entry i for x: buckets
// equal-width buckets over [x[0], x[n-1]], the product done in float64 so
// that microsecond spans of days cannot overflow. It is non-decreasing in
// i because x is.
func xBuckets(x []int64, buckets int) func(i int) int {
	buckets = max(buckets, 1)
	if len(x) == 0 {
		return func(int) int { return 0 }
	}
	x0, span := x[0], x[len(x)-1]-x[0]+1
	return func(i int) int {
		b := int(float64(x[i]-x0) * float64(buckets) / float64(span))
		return min(max(b, 0), buckets-1)
	}
}

// indexBuckets is xBuckets for x = 0, 1, ..., n-1 (buckets of entry
// indexes), without the slice.
func indexBuckets(n, buckets int) func(i int) int {
	buckets = max(buckets, 1)
	return func(i int) int {
		b := int(float64(i) * float64(buckets) / float64(n))
		return min(max(b, 0), buckets-1)
	}
}

// downsample is DownsampleMinMax over n entries whose bucket bucketOf
// gives (non-decreasing in the index).
func (ix *minMaxIndex) downsample(n int, bucketOf func(i int) int, buckets int, keep []int) []int {
	if n == 0 {
		return []int{}
	}
	if buckets < 1 {
		buckets = 1
	}
	if n <= 2*buckets {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, 2*len(ix.series)*buckets+2+len(keep))
	out = append(out, 0, n-1)
	for _, k := range keep {
		if k >= 0 && k < n {
			out = append(out, k)
		}
	}
	for lo := 0; lo < n; {
		b := bucketOf(lo)
		// The bucket ends at the first entry of a later one.
		hi := lo + 1 + sort.Search(n-lo-1, func(j int) bool { return bucketOf(lo+1+j) != b })
		for k := range ix.series {
			iMin, iMax := ix.minMax(k, lo, hi)
			out = append(out, iMin, iMax)
		}
		lo = hi
	}
	slices.Sort(out)
	return slices.Clip(slices.Compact(out))
}
