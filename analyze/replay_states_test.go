package analyze

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapview/snapview/snapshot"
)

// TestStatesAtMatchesStateAt checks that one pass gives the states that
// separate replays give.
func TestStatesAtMatchesStateAt(t *testing.T) {
	for _, path := range []string{"mlp_train.pickle"} {
		s, err := snapshot.Load(filepath.Join("..", "testdata", "snapshots", path))
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range s.Devices() {
			res, err := Replay(s, dev)
			if err != nil {
				t.Fatal(err)
			}
			n := len(res.Allocated)
			idx := []int{-1, 0, n / 3, n / 3, res.PeakIndex, n - 1}
			if res.PeakIndex < n/3 {
				idx[4] = n / 2
			}
			got, err := res.StatesAt(idx)
			if err != nil {
				t.Fatal(err)
			}
			for k, i := range idx {
				want, err := res.StateAt(i)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got[k]); diff != "" {
					t.Errorf("%s device %d: StatesAt at entry %d differs from StateAt (-want +got):\n%s", path, dev, i, diff)
				}
			}
			if _, err := res.StatesAt([]int{5, 2}); err == nil {
				t.Error("StatesAt(5, 2) = nil error, want one about the order")
			}
		}
	}
}
