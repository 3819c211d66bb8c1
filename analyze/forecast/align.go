package forecast

// align matches two sequences of requests, of na and nb elements, by a
// longest common subsequence under eq (the same stack and stream, sizes
// that scale together: see [forecaster.same]): the same code at another size
// issues the same requests in the same order, so the requests both files
// make are the common subsequence, and those one file makes alone (a cuDNN
// workspace that comes and goes with the size) the rest. It returns, for
// each element of a, the index of its match in b, or -1.
//
// The algorithm is Myers' O((N+M)D) difference algorithm in linear space
// (E. Myers, "An O(ND) Difference Algorithm and Its Variations",
// Algorithmica 1986), as diff-match-patch's diff_bisect writes it: the
// common prefix and suffix are matched first, then the middle snake splits
// the rest in two, recursively. work counts the diagonal steps taken, for
// the tests' bound on the cost (one per diagonal visited).
func align(na, nb int, eq func(i, j int) bool, work *int64) []int32 {
	m := make([]int32, na)
	for i := range m {
		m[i] = -1
	}
	d := differ{eq: eq, match: m, work: work}
	d.compare(0, na, 0, nb)
	return m
}

type differ struct {
	eq     func(i, j int) bool
	match  []int32
	v1, v2 []int
	work   *int64
}

func (d *differ) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.eq(aLo, bLo) {
		d.match[aLo] = int32(bLo)
		aLo++
		bLo++
	}
	for aLo < aHi && bLo < bHi && d.eq(aHi-1, bHi-1) {
		d.match[aHi-1] = int32(bHi - 1)
		aHi--
		bHi--
	}
	if aLo == aHi || bLo == bHi {
		return
	}
	x, y, ok := d.bisect(aLo, aHi, bLo, bHi)
	if !ok || (x == 0 && y == 0) || (x == aHi-aLo && y == bHi-bLo) {
		return // nothing in common
	}
	d.compare(aLo, aLo+x, bLo, bLo+y)
	d.compare(aLo+x, aHi, bLo+y, bHi)
}

// bisect finds the middle snake of a[aLo:aHi] and b[bLo:bHi] and returns
// the split point relative to aLo and bLo; ok is false when the two have
// no element in common.
func (d *differ) bisect(aLo, aHi, bLo, bHi int) (int, int, bool) {
	n1, n2 := aHi-aLo, bHi-bLo
	maxD := (n1 + n2 + 1) / 2
	off := maxD
	vlen := 2 * maxD
	if cap(d.v1) < vlen+2 {
		d.v1 = make([]int, vlen+2)
		d.v2 = make([]int, vlen+2)
	}
	v1, v2 := d.v1[:vlen+2], d.v2[:vlen+2]
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	delta := n1 - n2
	front := delta%2 != 0
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	for dd := 0; dd < maxD; dd++ {
		for k1 := -dd + k1start; k1 <= dd-k1end; k1 += 2 {
			k1o := off + k1
			var x1 int
			if k1 == -dd || (k1 != dd && v1[k1o-1] < v1[k1o+1]) {
				x1 = v1[k1o+1]
			} else {
				x1 = v1[k1o-1] + 1
			}
			y1 := x1 - k1
			for x1 < n1 && y1 < n2 && d.eq(aLo+x1, bLo+y1) {
				x1++
				y1++
			}
			*d.work++
			v1[k1o] = x1
			switch {
			case x1 > n1:
				k1end += 2
			case y1 > n2:
				k1start += 2
			case front:
				k2o := off + delta - k1
				if k2o >= 0 && k2o < vlen && v2[k2o] != -1 {
					if x2 := n1 - v2[k2o]; x1 >= x2 {
						return x1, y1, true
					}
				}
			}
		}
		for k2 := -dd + k2start; k2 <= dd-k2end; k2 += 2 {
			k2o := off + k2
			var x2 int
			if k2 == -dd || (k2 != dd && v2[k2o-1] < v2[k2o+1]) {
				x2 = v2[k2o+1]
			} else {
				x2 = v2[k2o-1] + 1
			}
			y2 := x2 - k2
			for x2 < n1 && y2 < n2 && d.eq(aLo+n1-x2-1, bLo+n2-y2-1) {
				x2++
				y2++
			}
			*d.work++
			v2[k2o] = x2
			switch {
			case x2 > n1:
				k2end += 2
			case y2 > n2:
				k2start += 2
			case !front:
				k1o := off + delta - k2
				if k1o >= 0 && k1o < vlen && v1[k1o] != -1 {
					x1 := v1[k1o]
					y1 := off + x1 - k1o
					if x1 >= n1-x2 {
						return x1, y1, true
					}
				}
			}
		}
	}
	return 0, 0, false
}
