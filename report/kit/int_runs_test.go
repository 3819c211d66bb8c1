package kit

import (
	"strconv"
	"strings"
	"testing"
)

// plainInts joins ns with ", ", every one written out.
func plainInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

func TestJoinIntRuns(t *testing.T) {
	many := make([]int, 0, 100)
	for i := range 100 {
		many = append(many, 2*i)
	}
	for _, tt := range []struct {
		ns   []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{1, 2}, "1, 2"},
		{[]int{1, 2, 3}, "1-3"},
		{[]int{0, 2, 3, 4, 5, 9, 10}, "0, 2-5, 9, 10"},
		{[]int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99}, "1-99"},
		{many, plainInts(many[:32]) + ", … (68 more)"},
	} {
		if got := JoinIntRuns(tt.ns); got != tt.want {
			t.Errorf("JoinIntRuns(%v) = %q, want %q", tt.ns, got, tt.want)
		}
	}
}
