package compareview

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// sidesOf measures device 0 of a bundled recording at each moment.
func sidesOf(t *testing.T, name string, at ...steps.Moment) []*compare.Side {
	t.Helper()
	path := filepath.Join("..", "..", "testdata", "snapshots", name)
	s, err := snapshot.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	dev := s.Devices()[0]
	if name == "ddp_rank1.pickle" {
		dev = 1
	}
	r, err := replay.Run(s, dev, replay.Options{Mode: replay.Peaks})
	if err != nil {
		t.Fatal(err)
	}
	var out []*compare.Side
	for _, m := range at {
		i, err := m.Resolve(s, r)
		if err != nil {
			t.Fatal(err)
		}
		sd, err := compare.MeasureSide(s, r, i, compare.SideOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sd.File = name
		out = append(out, sd)
	}
	return out
}

// TestDiffGolden: the text and JSON of a diff of two moments of the
// bundled leak_cache recording (step 3 against the last step).
func TestDiffGolden(t *testing.T) {
	sides := sidesOf(t, "leak_cache.pickle", steps.Moment{Kind: steps.MomentStep, N: 3}, steps.Moment{Kind: steps.MomentStep, N: -1})
	d := compare.Compare(sides[0], sides[1])
	o := DiffOptions{BaseAt: "step:3", NewAt: "step:last", Top: 3, Frames: 3}
	var txt, js bytes.Buffer
	if err := WriteDiff(&txt, d, o); err != nil {
		t.Fatal(err)
	}
	if err := WriteDiffJSON(&js, d, o); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "leak_cache.diff.txt"), txt.String())
	checkGolden(t, filepath.Join("testdata", "leak_cache.diff.json"), js.String())
}

// TestRanksGolden: the text and JSON of the two DDP ranks.
func TestRanksGolden(t *testing.T) {
	peak := steps.Moment{Kind: steps.MomentPeak}
	sides := append(sidesOf(t, "ddp_rank0.pickle", peak), sidesOf(t, "ddp_rank1.pickle", peak)...)
	rk := compare.CompareRanks(sides, 3)
	o := RanksOptions{Top: 3, Frames: 2}
	var txt, js bytes.Buffer
	if err := WriteRanks(&txt, rk, o); err != nil {
		t.Fatal(err)
	}
	if err := WriteRanksJSON(&js, rk, o); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "ddp.ranks.txt"), txt.String())
	checkGolden(t, filepath.Join("testdata", "ddp.ranks.json"), js.String())
}
