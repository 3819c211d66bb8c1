package whatif

import "slices"

// freeSet is an ordered set of block keys: a pool's free blocks in
// BlockComparatorSize order (stream, size, address) or its unmapped ranges
// in BlockComparatorAddress order (stream, address), the std::set of
// BlockPool. Pools hold tens to hundreds of free blocks, so the set is a
// list of sorted chunks of at most chunkMax keys: a lookup is two binary
// searches, an insert or delete moves at most one chunk.
type freeSet struct {
	byAddr bool
	chunks [][]bkey
}

const chunkMax = 256

func (s *freeSet) less(a, b bkey) bool {
	if a.stream != b.stream {
		return a.stream < b.stream
	}
	if !s.byAddr && a.size != b.size {
		return a.size < b.size
	}
	if a.addr != b.addr {
		return a.addr < b.addr
	}
	return a.b < b.b
}

// lowerBound returns the position of the first key not less than k:
// chunk ci, index j (ci == len(chunks) at the end).
func (s *freeSet) lowerBound(k bkey) (ci, j int) {
	lo, hi := 0, len(s.chunks)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		c := s.chunks[m]
		if s.less(c[len(c)-1], k) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(s.chunks) {
		return lo, 0
	}
	c := s.chunks[lo]
	a, b := 0, len(c)
	for a < b {
		m := int(uint(a+b) >> 1)
		if s.less(c[m], k) {
			a = m + 1
		} else {
			b = m
		}
	}
	return lo, a
}

// Insert adds k (keys are unique: they end with the block index).
func (s *freeSet) Insert(k bkey) {
	if len(s.chunks) == 0 {
		s.chunks = append(s.chunks, append(make([]bkey, 0, 16), k))
		return
	}
	ci, j := s.lowerBound(k)
	if ci == len(s.chunks) {
		ci = len(s.chunks) - 1
		j = len(s.chunks[ci])
	}
	c := slices.Insert(s.chunks[ci], j, k)
	if len(c) <= chunkMax {
		s.chunks[ci] = c
		return
	}
	half := len(c) / 2
	right := append(make([]bkey, 0, chunkMax), c[half:]...)
	s.chunks[ci] = c[:half:half]
	s.chunks = slices.Insert(s.chunks, ci+1, right)
}

// Delete removes k if present.
func (s *freeSet) Delete(k bkey) {
	ci, j := s.lowerBound(k)
	if ci == len(s.chunks) || s.chunks[ci][j] != k {
		return
	}
	c := slices.Delete(s.chunks[ci], j, j+1)
	if len(c) == 0 {
		s.chunks = slices.Delete(s.chunks, ci, ci+1)
		return
	}
	s.chunks[ci] = c
}

// AscendGreaterOrEqual calls fn for each key not less than pivot, in
// order, until fn returns false. fn must not change the set.
func (s *freeSet) AscendGreaterOrEqual(pivot bkey, fn func(bkey) bool) {
	ci, j := s.lowerBound(pivot)
	for ; ci < len(s.chunks); ci, j = ci+1, 0 {
		for _, k := range s.chunks[ci][j:] {
			if !fn(k) {
				return
			}
		}
	}
}

// Ascend calls fn for every key in order until fn returns false.
func (s *freeSet) Ascend(fn func(bkey) bool) {
	for _, c := range s.chunks {
		for _, k := range c {
			if !fn(k) {
				return
			}
		}
	}
}

// DescendLessThan calls fn for each key less than pivot, from the
// largest down, until fn returns false.
func (s *freeSet) DescendLessThan(pivot bkey, fn func(bkey) bool) {
	ci, j := s.lowerBound(pivot)
	for {
		j--
		if j < 0 {
			ci--
			if ci < 0 {
				return
			}
			j = len(s.chunks[ci]) - 1
		}
		if !fn(s.chunks[ci][j]) {
			return
		}
	}
}

// cursor is a position in a freeSet; valid until the set changes.
type cursor struct{ ci, j int }

// seek returns the position of the first key not less than k.
func (s *freeSet) seek(k bkey) cursor {
	ci, j := s.lowerBound(k)
	return cursor{ci, j}
}

// valid reports whether c is at a key.
func (s *freeSet) valid(c cursor) bool { return c.ci < len(s.chunks) }

// at returns the key at c, which must be valid.
func (s *freeSet) at(c cursor) bkey { return s.chunks[c.ci][c.j] }

// next returns the position after c.
func (s *freeSet) next(c cursor) cursor {
	c.j++
	if c.j == len(s.chunks[c.ci]) {
		c.ci, c.j = c.ci+1, 0
	}
	return c
}

// deleteAt removes the key at c, which must be valid.
func (s *freeSet) deleteAt(c cursor) {
	ch := slices.Delete(s.chunks[c.ci], c.j, c.j+1)
	if len(ch) == 0 {
		s.chunks = slices.Delete(s.chunks, c.ci, c.ci+1)
		return
	}
	s.chunks[c.ci] = ch
}
