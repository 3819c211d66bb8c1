package forecast

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/snapshot"
)

var workloads = []string{"gpt2_bs", "gpt2_seq", "resnet50_bs"}

// TestLeaveOneOut: from every point of a series, each point forecast from
// the others is within 3% of its peak allocated and 5% of its peak
// reserved.
func TestLeaveOneOut(t *testing.T) {
	n := 0
	for _, root := range scalingRoots(t) {
		for _, w := range workloadsIn(root) {
			pts := seriesOf(t, root, w)
			if len(pts) < 3 {
				continue
			}
			n++
			res, err := Run(filesOf(t, pts), Options{Param: "v", Targets: []int64{pts[len(pts)-1].value * 2}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.LeaveOneOut) != len(pts) {
				t.Fatalf("%s: %d leave-one-out rows for %d files", w, len(res.LeaveOneOut), len(pts))
			}
			for i, l := range res.LeaveOneOut {
				// The file's own peaks are torch's (meta.json).
				if l.FilePeakAllocated != pts[i].peakAllocated || l.FilePeakReserved != pts[i].peakReserved {
					t.Errorf("%s %d: file peaks %d, %d; torch %d, %d", w, l.Value, l.FilePeakAllocated, l.FilePeakReserved, pts[i].peakAllocated, pts[i].peakReserved)
				}
				t.Logf("%s %d: allocated %+.2f%%, reserved %+.2f%%", w, l.Value, l.AllocatedErrorPct, l.ReservedErrorPct)
				if math.Abs(l.AllocatedErrorPct) > 3 || math.Abs(l.ReservedErrorPct) > 5 {
					t.Errorf("%s %d from the others: allocated %+.2f%%, reserved %+.2f%%", w, l.Value, l.AllocatedErrorPct, l.ReservedErrorPct)
				}
			}
		}
	}
	if n == 0 {
		noSeries(t, "no series")
	}
}

// TestCapProbe: the largest batch that fits under a series' cap probes'
// cap (cap_probe.json: gpt2_bs 18 with the default settings, 19 with
// expandable_segments) is found exactly or one below, from the two
// smallest points and from every uncapped point, in at most
// MaxSimulations simulations.
func TestCapProbe(t *testing.T) {
	n := 0
	for _, root := range scalingRoots(t) {
		for _, w := range workloadsIn(root) {
			raw, err := os.ReadFile(filepath.Join(root, w, "cap_probe.json"))
			if err != nil {
				continue
			}
			n++
			testCapProbe(t, w, raw, seriesOf(t, root, w))
		}
	}
	if n == 0 {
		noSeries(t, "no cap probes")
	}
}

func testCapProbe(t *testing.T, w string, raw []byte, pts []point) {
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
	for _, name := range []string{"default", "expandable"} {
		tc := struct {
			conf string
			want int64
		}{probe.Tables[name].Conf, probe.Tables[name].Largest}
		if tc.want == 0 {
			t.Fatalf("%s/cap_probe.json: no %s table", w, name)
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
			var at int64
			if m.At != nil {
				at = m.At.PeakReserved
			}
			t.Logf("%s %q from %d files: max %d (start %d, refined %d, %d simulations), at it reserved %d; probes: %d", w, tc.conf, len(from), m.Value, m.Estimate, m.Start, m.Simulations, at, tc.want)
			if !m.Found || m.Value > tc.want || m.Value < tc.want-1 {
				t.Errorf("%s %q from %d files: max %d (found %t), want %d or %d", w, tc.conf, len(from), m.Value, m.Found, tc.want, tc.want-1)
			}
			if m.Simulations > MaxSimulations {
				t.Errorf("%d simulations", m.Simulations)
			}
		}
	}
}

// TestCapOOMRequest: a series' capped recordings (cap probes: one that
// fit, one that failed, <param>_<value>_cap<N>M) check a forecast under
// the cap. From the largest uncapped point below the capped run that fit
// and that run, the value of the one that failed is forecast to fail at
// the request it failed (same rounded size; gpt2_bs: also the same trace
// entry), with the peaks it reached before failing (meta.json); the value
// that fit fits.
func TestCapOOMRequest(t *testing.T) {
	n := 0
	for _, root := range scalingRoots(t) {
		for _, w := range workloadsIn(root) {
			caps, _ := filepath.Glob(filepath.Join(root, w, "*_cap*M"))
			var fit, oom string
			var fitV, oomV int64
			for _, d := range caps {
				var m struct {
					Value int64 `json:"value"`
					OOM   bool  `json:"oom"`
				}
				raw, err := os.ReadFile(filepath.Join(d, "meta.json"))
				if err != nil || json.Unmarshal(raw, &m) != nil {
					continue
				}
				if m.OOM {
					oom, oomV = d, m.Value
				} else {
					fit, fitV = d, m.Value
				}
			}
			if fit == "" || oom == "" {
				continue
			}
			n++
			var below *point
			for _, p := range seriesOf(t, root, w) {
				if p.value < fitV {
					below = &p
				}
			}
			if below == nil {
				t.Fatalf("%s: no uncapped point below %d", w, fitV)
			}
			testCapOOM(t, w, *below, fit, fitV, oom, oomV)
		}
	}
	if n == 0 {
		noSeries(t, "no capped recordings")
	}
}

func testCapOOM(t *testing.T, w string, below point, fit string, fitV int64, oomDir string, oomV int64) {
	s := load(t, oomDir)
	var oomEntry int
	var oomSize int64
	for i, e := range s.Traces[0] {
		if e.Action == snapshot.ActionOOM {
			oomEntry, oomSize = i, e.Size
			break
		}
	}
	var meta struct {
		PeakAllocated int64 `json:"peak_allocated"`
		PeakReserved  int64 `json:"peak_reserved"`
		Cap           int64 `json:"cap_bytes"`
	}
	raw, err := os.ReadFile(filepath.Join(oomDir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	files := []File{
		{Name: filepath.Base(below.dir), Value: below.value, Snap: load(t, below.dir)},
		{Name: filepath.Base(fit), Value: fitV, Snap: load(t, fit)},
	}
	res, err := Run(files, Options{Param: "batch", Targets: []int64{fitV, oomV}, Limit: meta.Cap})
	if err != nil {
		t.Fatal(err)
	}
	if res.Targets[0].OOM {
		t.Errorf("%s %d fails under the cap: %+v (it ran)", w, fitV, res.Targets[0])
	}
	tg := res.Targets[1]
	var cfg allocator.Config
	t.Logf("%s %d: %+v; recorded: oom entry %d, %d bytes, peaks %d, %d", w, oomV, tg, oomEntry, oomSize, meta.PeakAllocated, meta.PeakReserved)
	if !tg.OOM || cfg.RoundSize(tg.OOMSize) != oomSize {
		t.Errorf("%s %d: OOM %t, a request of %d bytes (rounded %d); the recorded run failed a %d-byte request",
			w, oomV, tg.OOM, tg.OOMSize, cfg.RoundSize(tg.OOMSize), oomSize)
	}
	if w == "gpt2_bs" && tg.OOMEntry != oomEntry {
		t.Errorf("%s %d: fails at entry %d, the recorded run at %d", w, oomV, tg.OOMEntry, oomEntry)
	}
	if tg.PeakAllocated != meta.PeakAllocated || tg.PeakReserved != meta.PeakReserved {
		t.Errorf("%s %d: peaks %d allocated, %d reserved; the recorded run %d, %d", w, oomV, tg.PeakAllocated, tg.PeakReserved, meta.PeakAllocated, meta.PeakReserved)
	}
}

// TestMaxSearchBounded: from the two smallest GPT-2 points, the search
// under caps from 2 GiB to 1 TiB runs at most MaxSimulations simulations
// and answers a value that fits whose next does not.
func TestMaxSearchBounded(t *testing.T) {
	pts := seriesOf(t, sharedScaling(t), "gpt2_bs")
	if len(pts) < 2 {
		noSeries(t, "no series")
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
