package units

import "testing"

func TestIntList(t *testing.T) {
	seq := func(lo, hi int) []int {
		var out []int
		for i := lo; i <= hi; i++ {
			out = append(out, i)
		}
		return out
	}
	odd := make([]int, 50)
	for i := range odd {
		odd[i] = 2*i + 1
	}
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{0, 1, 2}, "0, 1, 2"},
		{seq(0, 15), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15"},
		{seq(0, 99999), "0-99999"},
		{append(seq(0, 19), 22, 23, 30), "0-19, 22, 23, 30"},
		{odd, "1, 3, 5, 7, 9, 11, 13, 15, ..., 99 (50 in all)"},
	} {
		if got := IntList(tc.in); got != tc.want {
			t.Errorf("IntList(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
