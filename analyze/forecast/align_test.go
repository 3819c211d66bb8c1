package forecast

import (
	"math/rand/v2"
	"testing"
)

// lcsLen is the length of a longest common subsequence, by dynamic
// programming.
func lcsLen(a, b []int64) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func tokensOf(a, b []int64) ([]token3, []token) {
	ta := make([]token3, len(a))
	for i, v := range a {
		ta[i] = token3{size: [3]int64{v, -1, -1}}
	}
	tb := make([]token, len(b))
	for i, v := range b {
		tb[i] = token{size: v}
	}
	return ta, tb
}

// TestAlignIsLCS: on random sequences (small alphabets, so that many
// alignments tie; runs of insertions and deletions), align matches as
// many elements as a longest common subsequence has, each match equal and
// in increasing order on both sides.
func TestAlignIsLCS(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 2000 {
		na, nb := rng.IntN(40), rng.IntN(40)
		alpha := int64(1 + rng.IntN(5))
		a := make([]int64, na)
		for i := range a {
			a[i] = rng.Int64N(alpha)
		}
		var b []int64
		if n%2 == 0 { // b an edit of a
			for _, v := range a {
				if rng.IntN(5) > 0 {
					b = append(b, v)
				}
				if rng.IntN(5) == 0 {
					b = append(b, rng.Int64N(alpha+2))
				}
			}
		} else {
			b = make([]int64, nb)
			for i := range b {
				b[i] = rng.Int64N(alpha)
			}
		}
		var work int64
		ta, tb := tokensOf(a, b)
		m := align(ta, tb, &work)
		got, last := 0, -1
		for i, j := range m {
			if j < 0 {
				continue
			}
			if int(j) <= last || a[i] != b[j] {
				t.Fatalf("a=%v b=%v: match %d->%d breaks order or equality (%v)", a, b, i, j, m)
			}
			last = int(j)
			got++
		}
		if want := lcsLen(a, b); got != want {
			t.Fatalf("a=%v b=%v: %d matched, LCS %d (%v)", a, b, got, want, m)
		}
	}
}

// TestAlignWork: two sequences of 20,000 requests that differ in 100
// places align in work proportional to their length times the
// differences, not to the product of the lengths.
func TestAlignWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := make([]int64, 20000)
	for i := range a {
		a[i] = rng.Int64N(50)
	}
	b := append([]int64(nil), a...)
	for range 100 {
		b[rng.IntN(len(b))] = 1000
	}
	var work int64
	ta, tb := tokensOf(a, b)
	m := align(ta, tb, &work)
	n := 0
	for _, j := range m {
		if j >= 0 {
			n++
		}
	}
	if n < len(a)-100 {
		t.Errorf("%d matched, want at least %d", n, len(a)-100)
	}
	// A quadratic alignment would visit 4e8 cells; Myers visits about D²
	// diagonals (D = 200 differences).
	if work > 200_000 {
		t.Errorf("work %d for 2x20,000 requests and 200 differences, want at most 200,000", work)
	}
	t.Logf("work %d", work)
}
