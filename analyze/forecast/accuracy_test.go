package forecast

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// Tolerances of issue 23 for a forecast against torch's peaks, percent.
const (
	tolAllocated = 3.0
	tolReserved  = 5.0
)

// pairForecast is one point of a series forecast from two others.
type pairForecast struct {
	a, b, to int64  // the pair's values and the target
	where    string // "between", "above" or "below" the pair
	ea, er   float64
	// band: the target's band holds torch's peaks (true when it has
	// none and the forecast is within tolerance).
	band     bool
	hasBand  bool
	bandA    [2]int64
	bandR    [2]int64
	gotA     int64
	gotR     int64
	wantA    int64
	wantR    int64
	template string
}

func (p pairForecast) String() string {
	s := fmt.Sprintf("from %d,%d to %d (%s): allocated %d (torch %d, %+.2f%%), reserved %d (torch %d, %+.2f%%)",
		p.a, p.b, p.to, p.where, p.gotA, p.wantA, p.ea, p.gotR, p.wantR, p.er)
	if p.hasBand {
		s += fmt.Sprintf("; band allocated %d-%d, reserved %d-%d", p.bandA[0], p.bandA[1], p.bandR[0], p.bandR[1])
	}
	return s
}

// allPairs forecasts every point of a series from every pair of the
// others (from the two smallest only with short).
func allPairs(t *testing.T, pts []point, short bool) []pairForecast {
	var out []pairForecast
	files := filesOf(t, pts)
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			if short && (i != 0 || j != 1) {
				continue
			}
			var targets []int64
			var want []point
			for k, p := range pts {
				if k != i && k != j {
					targets = append(targets, p.value)
					want = append(want, p)
				}
			}
			res, err := Run([]File{files[i], files[j]}, Options{Param: "v", Targets: targets})
			if err != nil {
				t.Fatalf("from %d,%d: %v", pts[i].value, pts[j].value, err)
			}
			for k, tg := range res.Targets {
				w := want[k]
				pf := pairForecast{a: pts[i].value, b: pts[j].value, to: tg.Value, where: "between",
					ea: pct(tg.PeakAllocated, w.peakAllocated), er: pct(tg.PeakReserved, w.peakReserved),
					gotA: tg.PeakAllocated, gotR: tg.PeakReserved, wantA: w.peakAllocated, wantR: w.peakReserved, template: tg.Template}
				switch {
				case tg.Value < pf.a:
					pf.where = "below"
				case tg.Value > pf.b:
					pf.where = "above"
				}
				if (pf.where != "between") != tg.Extrapolated || (pf.where == "below") != tg.Below {
					t.Errorf("%v: extrapolated %t, below %t", pf, tg.Extrapolated, tg.Below)
				}
				loA, hiA := tg.AllocatedRange()
				loR, hiR := tg.ReservedRange()
				pf.hasBand = tg.Band != nil
				pf.bandA, pf.bandR = [2]int64{loA, hiA}, [2]int64{loR, hiR}
				pf.band = loA <= w.peakAllocated && w.peakAllocated <= hiA && loR <= w.peakReserved && w.peakReserved <= hiR
				out = append(out, pf)
			}
		}
	}
	return out
}

// TestSeriesAccuracy: on every recorded series, each point forecast from
// every pair of the others (between them, above or below both) has
// torch's peak allocated within 3% and peak reserved within 5%. It logs a
// table: per series and direction, the worst errors and the pair that
// made them, and how many forecasts have a band with two ends
// ([Target.Band]) and in how many it holds torch's peaks (go test -v
// lists every forecast).
func TestSeriesAccuracy(t *testing.T) {
	n := 0
	var table strings.Builder
	table.WriteString("| series | forecasts | between: alloc / reserved | above | below | worst allocated | worst reserved | bands with two ends (holding torch's peaks) |\n|---|---|---|---|---|---|---|---|\n")
	for _, root := range scalingRoots(t) {
		for _, w := range workloadsIn(root) {
			pts := seriesOf(t, root, w)
			if len(pts) < 3 {
				continue
			}
			n++
			all := allPairs(t, pts, testing.Short())
			type worst struct{ a, r float64 }
			by := map[string]*worst{"between": {}, "above": {}, "below": {}}
			var wa, wr pairForecast
			bands, held := 0, 0
			for _, p := range all {
				x := by[p.where]
				x.a, x.r = max(x.a, math.Abs(p.ea)), max(x.r, math.Abs(p.er))
				if math.Abs(p.ea) >= math.Abs(wa.ea) {
					wa = p
				}
				if math.Abs(p.er) >= math.Abs(wr.er) {
					wr = p
				}
				if p.hasBand && (p.bandA[0] < p.bandA[1] || p.bandR[0] < p.bandR[1]) {
					bands++
					if p.band {
						held++
					}
				}
				if math.Abs(p.ea) > tolAllocated || math.Abs(p.er) > tolReserved {
					t.Errorf("%s %v: beyond %.0f%% allocated / %.0f%% reserved", w, p, tolAllocated, tolReserved)
				} else if testing.Verbose() {
					t.Logf("%s %v", w, p)
				}
			}
			f := func(x *worst) string { return fmt.Sprintf("%.2f%% / %.2f%%", x.a, x.r) }
			fmt.Fprintf(&table, "| %s | %d | %s | %s | %s | %+.2f%% (%d,%d→%d) | %+.2f%% (%d,%d→%d) | %d (%d) |\n", w, len(all),
				f(by["between"]), f(by["above"]), f(by["below"]), wa.ea, wa.a, wa.b, wa.to, wr.er, wr.a, wr.b, wr.to, bands, held)
		}
	}
	if n == 0 {
		noSeries(t, "no series")
	}
	t.Log("all pairs, max |error| against torch's peaks:\n" + table.String())
}

// TestBandBelowFiles: the forecasts below both files that missed before
// reduction buffers were sized by their rule (gpt2_bs batch 1 from 12 and
// 16: reserved +5.05%; vit_bs batch 8 from 48 and 64: +10.00%) have a
// band whose other end is that old figure (the buffers at the files'
// size), above the forecast, and torch's peak reserved within 1% of the
// band.
func TestBandBelowFiles(t *testing.T) {
	tests := []struct {
		workload string
		a, b, to int64
		oldR     int64 // the forecast with the buffers at the files' size
	}{
		{"gpt2_bs", 12, 16, 1, 2004877312},
		{"gpt2_bs", 16, 24, 1, 2040528896},
		{"vit_bs", 48, 64, 8, 2260729856},
	}
	n := 0
	for _, root := range scalingRoots(t) {
		for _, tt := range tests {
			var pick []point
			var want point
			for _, p := range seriesOf(t, root, tt.workload) {
				switch p.value {
				case tt.a, tt.b:
					pick = append(pick, p)
				case tt.to:
					want = p
				}
			}
			if len(pick) != 2 || want.dir == "" {
				continue
			}
			n++
			res, err := Run(filesOf(t, pick), Options{Param: "batch", Targets: []int64{tt.to}})
			if err != nil {
				t.Fatal(err)
			}
			tg := res.Targets[0]
			if tg.Band == nil {
				t.Fatalf("%s %d from %d,%d: no band", tt.workload, tt.to, tt.a, tt.b)
			}
			lo, hi := tg.ReservedRange()
			t.Logf("%s %d from %d,%d: reserved %d, band %d-%d (%d buffers), torch %d", tt.workload, tt.to, tt.a, tt.b, tg.PeakReserved, lo, hi, tg.Band.Buffers, want.peakReserved)
			if tg.Band.PeakReserved != tt.oldR || hi != tt.oldR || lo != tg.PeakReserved {
				t.Errorf("band end %d, want %d above the forecast %d", tg.Band.PeakReserved, tt.oldR, tg.PeakReserved)
			}
			if float64(want.peakReserved) < 0.99*float64(lo) || float64(want.peakReserved) > 1.01*float64(hi) {
				t.Errorf("torch %d outside the band %d-%d by more than 1%%", want.peakReserved, lo, hi)
			}
		}
	}
	if n == 0 {
		noSeries(t, "no series")
	}
}
