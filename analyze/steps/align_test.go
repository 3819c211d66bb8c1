package steps

import (
	"slices"
	"testing"
)

func TestAlignFirst(t *testing.T) {
	for _, tc := range []struct {
		name        string
		first       []int64
		has         []bool
		at          int64
		shifts      []int64
		wantMissing int
	}{
		{"one", []int64{5}, []bool{true}, 5, []int64{0}, -1},
		{"latest wins", []int64{100, 700, 400}, []bool{true, true, true}, 700, []int64{600, 0, 300}, -1},
		{"negative clock", []int64{-20, -50}, []bool{true, true}, -20, []int64{0, 30}, -1},
		{"second has none", []int64{1, 0, 3}, []bool{true, false, false}, 0, nil, 1},
		{"none", nil, nil, 0, []int64{}, -1},
	} {
		at, shifts, missing := AlignFirst(tc.first, tc.has)
		if missing != tc.wantMissing {
			t.Errorf("%s: missing %d, want %d", tc.name, missing, tc.wantMissing)
			continue
		}
		if missing >= 0 {
			continue
		}
		if at != tc.at || !slices.Equal(shifts, tc.shifts) {
			t.Errorf("%s: at %d shifts %v, want %d %v", tc.name, at, shifts, tc.at, tc.shifts)
		}
	}
}
