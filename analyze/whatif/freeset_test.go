package whatif

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFreeSet checks the chunked set against a sorted slice under random
// inserts and deletes, enough to split chunks many times over.
func TestFreeSet(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, byAddr := range []bool{false, true} {
		s := &freeSet{byAddr: byAddr}
		var ref []bkey
		cmp := func(a, b bkey) int {
			switch {
			case s.less(a, b):
				return -1
			case s.less(b, a):
				return 1
			}
			return 0
		}
		for i := range 20000 {
			if len(ref) == 0 || rng.IntN(3) > 0 {
				k := bkey{stream: uint64(rng.IntN(3)), size: int64(rng.IntN(50)) * 512, addr: uint64(rng.IntN(1 << 20)), b: int32(i)}
				s.Insert(k)
				j, _ := slices.BinarySearchFunc(ref, k, cmp)
				ref = slices.Insert(ref, j, k)
			} else {
				j := rng.IntN(len(ref))
				s.Delete(ref[j])
				ref = slices.Delete(ref, j, j+1)
			}
			if i%997 == 0 {
				var got []bkey
				s.Ascend(func(k bkey) bool { got = append(got, k); return true })
				if !slices.Equal(got, ref) {
					t.Fatalf("byAddr %t, step %d: set holds %d keys out of order or lost, want %d", byAddr, i, len(got), len(ref))
				}
				pivot := bkey{stream: 1, size: 25 * 512, addr: 1 << 19}
				j, _ := slices.BinarySearchFunc(ref, pivot, cmp)
				c := s.seek(pivot)
				if s.valid(c) != (j < len(ref)) || (j < len(ref) && s.at(c) != ref[j]) {
					t.Fatalf("step %d: seek disagrees with the reference at %d", i, j)
				}
				var down []bkey
				s.DescendLessThan(pivot, func(k bkey) bool { down = append(down, k); return len(down) < 5 })
				for n, k := range down {
					if k != ref[j-1-n] {
						t.Fatalf("step %d: DescendLessThan gives %v at %d, want %v", i, k, n, ref[j-1-n])
					}
				}
			}
		}
	}
}
