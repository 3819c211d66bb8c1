package export

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// peakStates replays every device with a trace and takes its state at the
// peak (at the end for a device without one).
func peakStates(t *testing.T, s *snapshot.Snapshot) []DeviceState {
	t.Helper()
	var out []DeviceState
	for _, d := range s.Devices() {
		r, err := replay.Run(s, d, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		i := r.PeakIndex
		if len(r.Allocated) == 0 {
			i = -1
		}
		st, err := r.StateAt(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, DeviceState{Result: r, State: st, Moment: "peak"})
	}
	return out
}

// sums returns the profile's totals per sample type.
func sums(p *profile.Profile) []int64 {
	out := make([]int64, len(p.SampleType))
	for _, sm := range p.Sample {
		for i, v := range sm.Value {
			out[i] += v
		}
	}
	return out
}

// TestProfileTotals: inuse_space at the peak is allocated_bytes.all at the
// peak, alloc_space is allocated_bytes.all.allocated, and so on, on every
// torch 2.11 recording; go tool pprof -top reads the same totals.
func TestProfileTotals(t *testing.T) {
	goTool, _ := exec.LookPath("go")
	for _, dir := range sharedDirs(t) {
		s := loadShared(t, dir)
		states := peakStates(t, s)
		p, err := Profile(s, states, ProfileOptions{Source: dir, Labels: []Label{{"rank", "0"}}})
		if err != nil {
			t.Fatal(err)
		}
		var want [4]int64
		for _, ds := range states {
			r := ds.Result
			if r.Stats.Known.History != stats.Unknown {
				want[0] += r.Stats.Allocation[stats.PoolAll].Allocated
				want[1] += r.Stats.AllocatedBytes[stats.PoolAll].Allocated
			}
			want[2] += ds.State.Stats.Allocation[stats.PoolAll].Current
			want[3] += ds.State.Stats.AllocatedBytes[stats.PoolAll].Current
			if r.PeakIndex >= 0 && r.Allocated[r.PeakIndex] != ds.State.Stats.AllocatedBytes[stats.PoolAll].Current {
				t.Errorf("%s: state at peak has %d allocated, the series %d", dir, ds.State.Stats.AllocatedBytes[stats.PoolAll].Current, r.Allocated[r.PeakIndex])
			}
		}
		got := sums(p)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s: %s = %d, want %d", filepath.Base(dir), p.SampleType[i].Type, got[i], want[i])
			}
		}
		if goTool == "" || !pprofChecked[filepath.Base(dir)] {
			continue
		}
		f := filepath.Join(t.TempDir(), "p.pb.gz")
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(f, buf.Bytes(), 0o644)
		for i, st := range p.SampleType {
			if got := pprofTotal(t, goTool, "-sample_index="+st.Type, f); got != want[i] {
				t.Errorf("%s: go tool pprof -top -sample_index=%s: total %d, want %d", filepath.Base(dir), st.Type, got, want[i])
			}
		}
	}
	if goTool == "" {
		t.Skip("the go tool is not on PATH: go tool pprof not checked")
	}
}

// pprofChecked are the recordings go tool pprof reads in the test (it
// takes a quarter of a second a run): one with annotations, an OOM, a late
// start, two devices, CUDA graphs (a private pool).
var pprofChecked = map[string]bool{"annotations": true, "oom": true, "late_start": true, "two_devices": true, "cuda_graph": true}

var pprofTotalRE = regexp.MustCompile(`accounting for (-?\d+)(?:byte|B)?, [-\d.]+% of (-?\d+)(?:byte|B)? total`)

// pprofTotal runs go tool pprof -top and returns the sum of the nodes
// shown (every node).
func pprofTotal(t *testing.T, goTool string, args ...string) int64 {
	t.Helper()
	cmd := exec.Command(goTool, append([]string{"tool", "pprof", "-top", "-nodecount=1000000", "-nodefraction=0", "-edgefraction=0", "-unit=byte"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	m := pprofTotalRE.FindSubmatch(out)
	if m == nil {
		if bytes.Contains(out, []byte("Showing nodes accounting for 0")) || !bytes.Contains(out, []byte("Showing")) {
			return 0
		}
		t.Fatalf("go tool pprof -top: no total in\n%s", out)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// TestDiffProfile: the profile at the peak minus the one after the first
// entry sums to the difference of allocated bytes, in go tool pprof too.
func TestDiffProfile(t *testing.T) {
	dir := filepath.Join(filepath.Dir(sharedDirs(t)[0]), "annotations")
	s := loadShared(t, dir)
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(i int) *profile.Profile {
		st, err := r.StateAt(i)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Profile(s, []DeviceState{{Result: r, State: st, Moment: "entry"}}, ProfileOptions{Source: dir})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	d, err := DiffProfile(at(r.PeakIndex), at(10))
	if err != nil {
		t.Fatal(err)
	}
	want := r.Allocated[r.PeakIndex] - r.Allocated[10]
	if want == 0 {
		t.Fatal("the test needs two moments with different allocated bytes")
	}
	if got := sums(d)[3]; got != want {
		t.Errorf("inuse_space of the diff = %d, want %d", got, want)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: go tool pprof not checked")
	}
	f := filepath.Join(t.TempDir(), "d.pb.gz")
	var buf bytes.Buffer
	if err := d.Write(&buf); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f, buf.Bytes(), 0o644)
	if got := pprofTotal(t, goTool, "-sample_index=inuse_space", f); got != want {
		t.Errorf("go tool pprof -top on the diff: %d, want %d", got, want)
	}
}
