package html

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/snapview/snapview/analyze/timeline"
)

// TestDetailJSON reads the detail island htmlDetailJSON writes back as
// htmlDetail (encoding/json) and undoes its differences and its unit:
// every level's columns and every single allocation's fields come back,
// in the unit the island names (512 where it divides every byte figure, 1
// where one does not).
func TestDetailJSON(t *testing.T) {
	level := timeline.Level{
		Buckets: 2, Index: []int{0, 3, 7}, X: []int64{0, 40, 95},
		Reserved: []int64{2048, 4096, 4096}, Active: []int64{512, 3072, 1024}, Allocated: []int64{512, 2560, 1024},
		Groups: [][]int64{{512, 2048, 512}, {0, 512, 512}},
	}
	singles := []SingleAlloc{
		{Start: -1, End: 5, FreeCompleted: -1, X0: -1, X1: 60, Addr: 0x7f0000000000, Size: 1536, Requested: 1500, Stack: 3, Group: 1},
		{Start: 2, End: 8, FreeCompleted: 9, X0: 30, X1: 100, Addr: 0x7f0000200000, Size: 512, Requested: 512, Stack: -1, Group: 0},
	}
	for _, tc := range []struct {
		name     string
		size     int64 // of the second single
		isTime   bool
		wantUnit int64
	}{
		{"unit 512, times", 512, true, 512},
		{"unit 1, no times", 100, false, 1},
	} {
		ss := slices.Clone(singles)
		ss[1].Size = tc.size
		d := &DeviceView{Timeline: &timeline.Timeline{Index: []int{0, 7}, XIsTime: tc.isTime, Levels: []timeline.Level{level}}, Singles: ss}
		b, err := htmlDetailJSON([]htmlSection{{DeviceView: d, ID: `dev0<"x">`}, {DeviceView: &DeviceView{}, ID: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		var got htmlDetail
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, b)
		}
		if len(got.Devices) != 1 || got.Devices[0].Section != `dev0<"x">` || got.Devices[0].Unit != tc.wantUnit {
			t.Fatalf("%s: devices %+v, want one, section dev0<\"x\">, unit %d", tc.name, got.Devices, tc.wantUnit)
		}
		dd := got.Devices[0]
		undo := func(v []int64, scale int64) []int64 {
			out := make([]int64, len(v))
			var s int64
			for i, x := range v {
				s += x
				out[i] = s * scale
			}
			return out
		}
		x := level.X
		if !tc.isTime {
			x = []int64{0, 0, 0}
		}
		want := [][]int64{{0, 3, 7}, x, level.Reserved, level.Active, level.Allocated, level.Groups[0], level.Groups[1]}
		if len(dd.Levels) != 1 || dd.Levels[0].Buckets != 2 || len(dd.Levels[0].Cols) != len(want) {
			t.Fatalf("%s: levels %+v", tc.name, dd.Levels)
		}
		for k, col := range dd.Levels[0].Cols {
			scale := int64(1)
			if k >= 2 {
				scale = dd.Unit
			}
			if g := undo(col, scale); !slices.Equal(g, want[k]) {
				t.Errorf("%s: level column %d reads %v, want %v", tc.name, k, g, want[k])
			}
		}
		if len(dd.Singles) != 10 {
			t.Fatalf("%s: %d single columns, want 10", tc.name, len(dd.Singles))
		}
		for k, col := range dd.Singles {
			scale := int64(1)
			if k == 5 {
				scale = dd.Unit
			}
			var w []int64
			for _, s := range ss {
				w = append(w, [...]int64{int64(s.Start), int64(s.End), int64(s.FreeCompleted), s.X0, s.X1, s.Size, s.Requested, int64(s.Addr), int64(s.Stack), int64(s.Group)}[k])
			}
			if g := undo(col, scale); !slices.Equal(g, w) {
				t.Errorf("%s: single column %d reads %v, want %v", tc.name, k, g, w)
			}
		}
	}
}
