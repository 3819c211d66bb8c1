package analyze

import "slices"

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
func DownsampleMinMax(x []int64, buckets int, keep []int, series ...[]int64) []int {
	n := len(x)
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
	picked := make([]bool, n)
	picked[0], picked[n-1] = true, true
	for _, k := range keep {
		if k >= 0 && k < n {
			picked[k] = true
		}
	}
	x0, span := x[0], x[n-1]-x[0]+1
	// bucketOf maps x to [0, buckets); the product is done in float64 so
	// that microsecond spans of days cannot overflow.
	bucketOf := func(v int64) int {
		b := int(float64(v-x0) * float64(buckets) / float64(span))
		return min(max(b, 0), buckets-1)
	}
	for lo := 0; lo < n; {
		b := bucketOf(x[lo])
		hi := lo + 1
		for hi < n && bucketOf(x[hi]) == b {
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
	out := make([]int, 0, 4*buckets)
	for i, p := range picked {
		if p {
			out = append(out, i)
		}
	}
	return slices.Clip(out)
}
