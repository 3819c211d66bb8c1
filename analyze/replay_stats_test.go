package analyze

import (
	"reflect"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestReplayStatsEqualsReplay checks that ReplayStats gives Replay's end
// figures, end check and seeding on every real file and a synthetic
// trace, without the per-entry series.
func TestReplayStatsEqualsReplay(t *testing.T) {
	type input struct {
		name string
		s    *snapshot.Snapshot
	}
	inputs := []input{{"synthetic churn", syntheticChurn(5000)}}
	for _, ss := range sharedSnapshots(t) {
		s, err := snapshot.Load(ss.path)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{ss.name, s})
	}
	n := 0
	for _, in := range inputs {
		for _, d := range in.s.Devices() {
			full, err := Replay(in.s, d)
			if err != nil {
				t.Fatalf("%s device %d: %v", in.name, d, err)
			}
			r, err := ReplayStats(in.s, d)
			if err != nil {
				t.Fatalf("%s device %d: ReplayStats: %v", in.name, d, err)
			}
			n++
			if !reflect.DeepEqual(r.Stats, full.Stats) {
				t.Errorf("%s device %d: Stats differ:\n got %+v\nwant %+v", in.name, d, r.Stats, full.Stats)
			}
			if !reflect.DeepEqual(r.Check, full.Check) || r.Seeded != full.Seeded || r.Device != d {
				t.Errorf("%s device %d: Check/Seeded %+v %v, Replay's %+v %v", in.name, d, r.Check, r.Seeded, full.Check, full.Seeded)
			}
			if r.Allocated != nil || r.Active != nil || r.Reserved != nil || r.Requested != nil || r.Allocs != nil || r.OOMs != nil || r.PeakIndex != -1 {
				t.Errorf("%s device %d: ReplayStats filled the series", in.name, d)
			}
		}
	}
	t.Logf("%d device replays compared", n)
}
