package replay

import (
	"path/filepath"
	"slices"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot"
)

// TestReplayWithStates checks on real files that the states Run
// returns (taken as its replay passes them, and the peak's from a copy of
// the state before it) are those StateAt returns, with copies every few
// entries so that the copies move, and with the default stretch.
func TestReplayWithStates(t *testing.T) {
	paths := []string{filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle")}
	for _, ss := range SharedSnapshots(t) {
		paths = append(paths, ss.Path)
	}
	for _, rel := range []string{"public/p32-3dev-expandable-oom.pickle", "whatif/varlen_train/expandable/snapshot.pickle.xz", "whatif/varlen_train/default_cap4656M/snapshot.pickle.xz", "whatif/frag_cap/gc_06/snapshot.pickle.xz"} {
		paths = append(paths, filepath.Join(Corpus(t), rel))
	}
	checked := 0
	for _, path := range paths {
		s, err := snapshot.Load(path)
		if err != nil {
			t.Logf("%s: %v", path, err)
			continue
		}
		for _, dev := range s.Devices() {
			want, err := Run(s, dev, Options{})
			if err != nil || len(want.Allocated) < 2 {
				continue
			}
			n := len(want.Allocated)
			idx := []int{-1, 0, n / 3, n / 3, 2 * n / 3, n - 1}
			idx = append(idx, want.OOMs...)
			slices.Sort(idx)
			for _, every := range []int{0, 7, 100} {
				r, err := Run(s, dev, Options{States: idx, PeakState: true, every: every})
				if err != nil {
					t.Fatalf("%s device %d: %v", path, dev, err)
				}
				states := r.States
				if diff := cmp.Diff(want.Allocated, r.Allocated); diff != "" || r.PeakIndex != want.PeakIndex {
					t.Fatalf("%s device %d: the replay's series differ from Replay's", path, dev)
				}
				wantIdx := slices.Clone(idx)
				if !slices.Contains(idx, want.PeakIndex) {
					wantIdx = slices.Sorted(slices.Values(append(wantIdx, want.PeakIndex)))
				}
				if len(states) != len(wantIdx) {
					t.Fatalf("%s device %d: %d states for entries %v", path, dev, len(states), wantIdx)
				}
				for k, i := range wantIdx {
					if k > 0 && wantIdx[k-1] == i {
						if states[k] != states[k-1] && cmp.Diff(states[k-1], states[k]) != "" {
							t.Fatalf("%s device %d: two states for entry %d differ", path, dev, i)
						}
						continue
					}
					if n > 20000 && every != 0 && i != want.PeakIndex {
						continue // StateAt is a pass of its own: the default stretch checks every entry
					}
					one, err := want.StateAt(i)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(one, states[k]); diff != "" {
						t.Fatalf("%s device %d (copies every %d entries): the state after entry %d differs from StateAt's (-want +got):\n%s", path, dev, every, i, diff)
					}
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no device checked")
	}
	t.Logf("%d device replays checked", checked)
}

// TestReplayWithErrors checks that entries out of range or out of order
// are errors.
func TestReplayWithErrors(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.Traces[0])
	for _, idx := range [][]int{{-2}, {n}, {3, 2}} {
		if _, err := Run(s, 0, Options{States: idx}); err == nil {
			t.Errorf("Run(States %v): no error", idx)
		}
	}
}

// TestReplayWithNoTrace: a device with segments and no trace entries has
// the one state before the (absent) first entry, StateAt's.
func TestReplayWithNoTrace(t *testing.T) {
	s, err := snapshot.Load(filepath.Join(Corpus(t), "torch2.11", "legacy_segments", "snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(s, 0, Options{States: []int{-1}, PeakState: true})
	if err != nil {
		t.Fatal(err)
	}
	states := r.States
	want, err := r.StateAt(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(states) != 1 {
		t.Fatalf("%d states, want 1", len(states))
	}
	if diff := cmp.Diff(want, states[0]); diff != "" {
		t.Errorf("state before the first entry differs from StateAt's (-want +got):\n%s", diff)
	}
}
