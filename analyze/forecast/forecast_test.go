package forecast

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/snapshot"
)

var workloads = []string{"gpt2_bs", "gpt2_seq", "resnet50_bs"}

// accuracy forecasts every point of a series from each pair of points (or
// only the two smallest) and returns the worst errors, percent, with a
// table of every forecast: of the forecasts above the pair's smaller value
// (interpolated, or extrapolated up), and of those below it (down).
func accuracy(t *testing.T, pts []point, pairsOnly bool) (worstA, worstR, downA, downR float64, table string) {
	var b strings.Builder
	files := filesOf(t, pts)
	for i := range pts {
		for j := i + 1; j < len(pts); j++ {
			if pairsOnly && (i != 0 || j != 1) {
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
				ea, er := pct(tg.PeakAllocated, want[k].peakAllocated), pct(tg.PeakReserved, want[k].peakReserved)
				if tg.Value < pts[i].value {
					downA, downR = max(downA, math.Abs(ea)), max(downR, math.Abs(er))
				} else {
					worstA, worstR = max(worstA, math.Abs(ea)), max(worstR, math.Abs(er))
				}
				fmt.Fprintf(&b, "from %d,%d to %d: allocated %d (torch %d, %+.2f%%), reserved %d (torch %d, %+.2f%%)\n",
					pts[i].value, pts[j].value, tg.Value, tg.PeakAllocated, want[k].peakAllocated, ea,
					tg.PeakReserved, want[k].peakReserved, er)
			}
		}
	}
	return worstA, worstR, downA, downR, b.String()
}

// TestSeriesAccuracy: on the recorded series, each point forecast from the
// two smallest, and from any two, has torch's peak allocated within 3% and
// peak reserved within 5%; forecast below both files (down to the
// smallest point, where the code can take another path: GPT-2 at batch 1
// makes none of the 49 reduction workspaces a step batch 2 and up make,
// ResNet-50's cuDNN workspaces change with the batch), within 3% and 8%.
func TestSeriesAccuracy(t *testing.T) {
	n := 0
	for _, root := range scalingRoots {
		for _, w := range workloadsIn(root) {
			pts := seriesOf(t, root, w)
			if len(pts) < 3 {
				continue
			}
			n++
			for _, pairsOnly := range []bool{true, false} {
				wa, wr, da, dr, table := accuracy(t, pts, pairsOnly)
				t.Logf("%s (two smallest only: %t): worst allocated %.2f%%, reserved %.2f%%; below both files: %.2f%%, %.2f%%", w, pairsOnly, wa, wr, da, dr)
				if wa > 3 || wr > 5 || da > 3 || dr > 8 {
					t.Errorf("%s: worst error allocated %.2f%% (max 3%%), reserved %.2f%% (max 5%%); below both: %.2f%% (3%%), %.2f%% (8%%):\n%s", w, wa, wr, da, dr, table)
				} else if testing.Verbose() {
					t.Log("\n" + table)
				}
			}
		}
	}
	if n == 0 {
		t.Skip("no series")
	}
}

// TestCapProbe: the largest batch that fits under the cap probes' cap
// (gpt2_bs/cap_probe.json: 18 with the default settings, 19 with
// expandable_segments) is found exactly or one below, from the two
// smallest points and from every uncapped point, in at most
// MaxSimulations simulations.
func TestCapProbe(t *testing.T) {
	root := scalingRoots[0]
	raw, err := os.ReadFile(filepath.Join(root, "gpt2_bs", "cap_probe.json"))
	if err != nil {
		t.Skip(err)
	}
	var probe struct {
		Cap    int64 `json:"cap_bytes"`
		Tables map[string]struct {
			Conf    string `json:"alloc_conf"`
			Largest int64  `json:"largest_fit_below_first_oom"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		t.Fatal(err)
	}
	pts := seriesOf(t, root, "gpt2_bs")
	for _, name := range []string{"default", "expandable"} {
		tc := struct {
			conf string
			want int64
		}{probe.Tables[name].Conf, probe.Tables[name].Largest}
		if tc.want == 0 {
			t.Fatalf("cap_probe.json: no %s table", name)
		}
		cfg, err := allocator.Parse(tc.conf)
		if err != nil {
			t.Fatal(err)
		}
		for _, from := range [][]point{pts[:2], pts} {
			res, err := Run(filesOf(t, from), Options{Param: "batch", Limit: probe.Cap, Max: true, Conf: &cfg, ConfText: tc.conf})
			if err != nil {
				t.Fatal(err)
			}
			m := res.Max
			t.Logf("%q from %d files: max %d (estimate %d, %d simulations), at it reserved %d; probes: %d", tc.conf, len(from), m.Value, m.Estimate, m.Simulations, m.At.PeakReserved, tc.want)
			if !m.Found || m.Value > tc.want || m.Value < tc.want-1 {
				t.Errorf("%q from %d files: max %d (found %t), want %d or %d", tc.conf, len(from), m.Value, m.Found, tc.want, tc.want-1)
			}
			if m.Simulations > MaxSimulations {
				t.Errorf("%d simulations", m.Simulations)
			}
		}
	}
}

// TestCapOOMRequest: batch 19 under the cap probes' cap, forecast from
// batch 16 and the capped run at batch 18, fails at the request the
// recorded run at batch 19 failed (batch_19_cap10883M: its oom entry, the
// same entry of the same code's trace, the same rounded size), with the
// peaks the recorded run reached before it failed (meta.json).
func TestCapOOMRequest(t *testing.T) {
	root := filepath.Join(scalingRoots[0], "gpt2_bs")
	oomDir := filepath.Join(root, "batch_19_cap10883M")
	if !fileExists(snapPath(oomDir)) {
		t.Skip("no batch_19_cap10883M")
	}
	s19 := load(t, oomDir)
	var oomEntry int
	var oomSize int64
	for i, e := range s19.Traces[0] {
		if e.Action == snapshot.ActionOOM {
			oomEntry, oomSize = i, e.Size
			break
		}
	}
	files := []File{
		{Name: "batch_16", Value: 16, Snap: load(t, filepath.Join(root, "batch_16"))},
		{Name: "batch_18_cap", Value: 18, Snap: load(t, filepath.Join(root, "batch_18_cap10883M"))},
	}
	res, err := Run(files, Options{Param: "batch", Targets: []int64{17, 19}, Limit: 10883 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Targets[0].OOM {
		t.Errorf("batch 17 fails under the cap: %+v (the probes: it fits)", res.Targets[0])
	}
	tg := res.Targets[1]
	var cfg allocator.Config
	t.Logf("batch 19: %+v; recorded oom entry %d, %d bytes", tg, oomEntry, oomSize)
	if !tg.OOM || tg.OOMEntry != oomEntry || cfg.RoundSize(tg.OOMSize) != oomSize {
		t.Errorf("batch 19: OOM %t at entry %d of %d bytes (rounded %d); the recorded run failed at entry %d, %d bytes",
			tg.OOM, tg.OOMEntry, tg.OOMSize, cfg.RoundSize(tg.OOMSize), oomEntry, oomSize)
	}
	raw, err := os.ReadFile(filepath.Join(oomDir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		PeakAllocated int64 `json:"peak_allocated"`
		PeakReserved  int64 `json:"peak_reserved"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	if tg.PeakAllocated != meta.PeakAllocated || tg.PeakReserved != meta.PeakReserved {
		t.Errorf("batch 19: peaks %d allocated, %d reserved; the recorded run %d, %d", tg.PeakAllocated, tg.PeakReserved, meta.PeakAllocated, meta.PeakReserved)
	}
}

// TestMaxSearchBounded: from the two smallest GPT-2 points, the search
// under caps from 2 GiB to 1 TiB runs at most MaxSimulations simulations
// and answers a value that fits whose next does not.
func TestMaxSearchBounded(t *testing.T) {
	pts := seriesOf(t, scalingRoots[0], "gpt2_bs")
	if len(pts) < 2 {
		t.Skip("no series")
	}
	files := filesOf(t, pts[:2])
	for _, limit := range []int64{100 << 20, 2 << 30, 10883 << 20, 50 << 30, 1 << 40} {
		res, err := Run(files, Options{Param: "batch", Limit: limit, Max: true})
		if err != nil {
			t.Fatal(err)
		}
		m := res.Max
		t.Logf("limit %d: %+v (value %d, %d simulations, start %d, refined %d)", limit, m.Found, m.Value, m.Simulations, m.Estimate, m.Start)
		if m.Simulations > MaxSimulations || res.Simulations != m.Simulations {
			t.Errorf("limit %d: %d simulations (result counts %d), at most %d", limit, m.Simulations, res.Simulations, MaxSimulations)
		}
		if limit == 100<<20 {
			if m.Value != 0 || m.Next == nil || m.Next.Value != 1 {
				t.Errorf("limit 100 MiB: %+v, want nothing fits", m)
			}
			continue
		}
		if !m.Found {
			t.Errorf("limit %d: not found: %+v", limit, m)
			continue
		}
		check, err := Run(files, Options{Param: "batch", Limit: limit, Targets: []int64{m.Value, m.Value + 1}})
		if err != nil {
			t.Fatal(err)
		}
		if check.Targets[0].OOM || !check.Targets[1].OOM {
			t.Errorf("limit %d: %d fits %t, %d fits %t", limit, m.Value, !check.Targets[0].OOM, m.Value+1, !check.Targets[1].OOM)
		}
	}
}
