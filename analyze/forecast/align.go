package forecast

// align matches two sequences of requests, ta and tb, by a longest common
// subsequence under differ.eq (the same stack and stream, sizes that scale
// together: see [forecaster.tokens]): the same code at another size issues
// the same requests in the same order, so the requests both files make are
// the common subsequence, and those one file makes alone (a cuDNN
// workspace that comes and goes with the size) the rest. It returns, for
// each element of ta, the index of its match in tb, or -1.
//
// The algorithm is Myers' O((N+M)D) difference algorithm in linear space
// (E. Myers, "An O(ND) Difference Algorithm and Its Variations",
// Algorithmica 1986), as diff-match-patch's diff_bisect writes it: the
// common prefix and suffix are matched first, then the middle snake splits
// the rest in two, recursively. work counts the diagonal steps taken, for
// the tests' bound on the cost (one per diagonal visited).
func align(ta []token3, tb []token, work *int64) []int32 {
	m := make([]int32, len(ta))
	for i := range m {
		m[i] = -1
	}
	d := differ{ta: ta, tb: tb, match: m, work: work}
	d.compare(0, len(ta), 0, len(tb))
	return m
}

// token is a request of the second sequence: its key (stack and stream)
// and its size rounded as the allocator rounds it.
type token struct {
	key  int32
	size int64
}

// token3 is a request of the first sequence: its key and the rounded
// sizes it would have in the second sequence's run if it were constant,
// linear or quadratic in the parameter (-1: none).
type token3 struct {
	key  int32
	size [3]int64
}

// eq: element x of the first sequence can be element y of the second.
func (d *differ) eq(x, y int) bool {
	a, b := &d.ta[x], &d.tb[y]
	return a.key == b.key && (a.size[0] == b.size || a.size[1] == b.size || a.size[2] == b.size)
}

type differ struct {
	ta     []token3
	tb     []token
	match  []int32
	v1, v2 vArray
	gen    uint32
	work   *int64
}

// vArray is one of Myers' V arrays (the furthest x reached on each
// diagonal), reset to -1 in constant time by bumping a generation: an
// entry written in an older one reads -1.
type vArray struct {
	w   []uint64 // generation<<32 | x
	cur uint64   // the generation, shifted
}

func (v *vArray) get(i int) int {
	x := v.w[i]
	if x&^0xffffffff != v.cur {
		return -1
	}
	return int(int32(uint32(x)))
}

func (v *vArray) set(i, x int) { v.w[i] = v.cur | uint64(uint32(int32(x))) }

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
	if len(d.v1.w) < vlen+2 {
		d.v1 = vArray{w: make([]uint64, vlen+2)}
		d.v2 = vArray{w: make([]uint64, vlen+2)}
	}
	d.gen++ // every entry reads -1 again
	v1, v2 := &d.v1, &d.v2
	v1.cur, v2.cur = uint64(d.gen)<<32, uint64(d.gen)<<32
	v1.set(off+1, 0)
	v2.set(off+1, 0)
	delta := n1 - n2
	front := delta%2 != 0
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	for dd := 0; dd < maxD; dd++ {
		for k1 := -dd + k1start; k1 <= dd-k1end; k1 += 2 {
			k1o := off + k1
			var x1 int
			if k1 == -dd || (k1 != dd && v1.get(k1o-1) < v1.get(k1o+1)) {
				x1 = v1.get(k1o + 1)
			} else {
				x1 = v1.get(k1o-1) + 1
			}
			y1 := x1 - k1
			for x1 < n1 && y1 < n2 && d.eq(aLo+x1, bLo+y1) {
				x1++
				y1++
			}
			*d.work++
			v1.set(k1o, x1)
			switch {
			case x1 > n1:
				k1end += 2
			case y1 > n2:
				k1start += 2
			case front:
				k2o := off + delta - k1
				if k2o >= 0 && k2o < vlen && v2.get(k2o) != -1 {
					if x2 := n1 - v2.get(k2o); x1 >= x2 {
						return x1, y1, true
					}
				}
			}
		}
		for k2 := -dd + k2start; k2 <= dd-k2end; k2 += 2 {
			k2o := off + k2
			var x2 int
			if k2 == -dd || (k2 != dd && v2.get(k2o-1) < v2.get(k2o+1)) {
				x2 = v2.get(k2o + 1)
			} else {
				x2 = v2.get(k2o-1) + 1
			}
			y2 := x2 - k2
			for x2 < n1 && y2 < n2 && d.eq(aLo+n1-x2-1, bLo+n2-y2-1) {
				x2++
				y2++
			}
			*d.work++
			v2.set(k2o, x2)
			switch {
			case x2 > n1:
				k2end += 2
			case y2 > n2:
				k2start += 2
			case !front:
				k1o := off + delta - k2
				if k1o >= 0 && k1o < vlen && v1.get(k1o) != -1 {
					x1 := v1.get(k1o)
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
