package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// stateSnapshot is a small hand-made snapshot: a small and a large
// segment, three allocations with Python and C++ frames, an OOM and a free.
func stateSnapshot() *snapshot.Snapshot {
	const (
		mib   = int64(1 << 20)
		small = snapshot.Addr(0x7f0000000000)
		large = snapshot.Addr(0x7f0000200000)
	)
	ev := func(a snapshot.Action, addr snapshot.Addr, size int64, stack snapshot.StackID, t int64) snapshot.TraceEntry {
		return snapshot.TraceEntry{Action: a, Addr: addr, Size: size, Stack: stack, TimeUS: 1_700_000_000_000_000 + t, Flags: snapshot.FlagTime}
	}
	return &snapshot.Snapshot{
		Frames: []snapshot.Frame{
			{Filename: "/home/x/train.py", Line: 10, Name: "step"},
			{Filename: "/home/x/model.py", Line: 5, Name: "forward"},
			{Filename: "??", Line: 0, Name: "c10::cuda::CUDACachingAllocator::malloc"},
		},
		Stacks: [][]snapshot.FrameID{nil, {1, 0}, {2, 0}},
		Traces: [][]snapshot.TraceEntry{{
			ev(snapshot.ActionSegmentAlloc, small, 2*mib, 1, 0),
			ev(snapshot.ActionAlloc, small, 1000, 1, 10),
			ev(snapshot.ActionAlloc, small+1024, 3000, 2, 20),
			ev(snapshot.ActionSegmentAlloc, large, 20*mib, 1, 30),
			ev(snapshot.ActionAlloc, large, 15*mib, 1, 40),
			{Action: snapshot.ActionOOM, Addr: 1 << 30, Size: 400 << 30, TimeUS: 1_700_000_000_000_050, Flags: snapshot.FlagTime, Stack: 1},
			ev(snapshot.ActionFreeRequested, small, 1000, 1, 60),
			ev(snapshot.ActionFreeCompleted, small, 1000, 1, 60),
		}},
		HasDeviceTraces: true,
		Segments: []snapshot.Segment{
			{Address: small, TotalSize: 2 * mib, Type: "small", Blocks: []snapshot.Block{
				{Address: small, Size: 1024, State: snapshot.StateInactive},
				{Address: small + 1024, Size: 3072, RequestedSize: 3000, State: snapshot.StateActiveAllocated, Stack: 2},
				{Address: small + 4096, Size: 2*mib - 4096, State: snapshot.StateInactive},
			}},
			{Address: large, TotalSize: 20 * mib, Type: "large", Blocks: []snapshot.Block{
				{Address: large, Size: 15 * mib, RequestedSize: 15 * mib, State: snapshot.StateActiveAllocated, Stack: 1},
				{Address: large + snapshot.Addr(15*mib), Size: 5 * mib, State: snapshot.StateInactive},
			}},
		},
		Settings: &snapshot.AllocatorSettings{MaxSplitSize: -1},
	}
}

func TestWriteStateGolden(t *testing.T) {
	s := stateSnapshot()
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Check.Equal {
		t.Fatalf("end check: %v", r.Check.Differences)
	}
	for _, tc := range []struct {
		at    string
		index int
	}{
		{"peak", r.PeakIndex},
		{"oom", r.OOMs[0]},
	} {
		st, err := r.StateAt(tc.index)
		if err != nil {
			t.Fatal(err)
		}
		v := NewStateView(s, r, st, tc.at, StateOptions{Top: 5, Frames: 10})
		for _, format := range []string{"txt", "json"} {
			var buf bytes.Buffer
			write := WriteState
			if format == "json" {
				write = WriteStateJSON
			}
			if err := write(&buf, v); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", "synthetic.state."+tc.at+"."+format)
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), buf.String()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", golden, diff)
			}
		}
	}
}

func TestStateStacks(t *testing.T) {
	s := stateSnapshot()
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := r.StateAt(r.PeakIndex)
	if err != nil {
		t.Fatal(err)
	}
	v := NewStateView(s, r, st, "peak", StateOptions{Top: 5, Frames: 1})
	got := map[string][]string{}
	for _, g := range v.Stacks {
		got[g.Where] = g.Lines
	}
	want := map[string][]string{
		// The allocator's frame is left out next to Python frames.
		"train.py:10 step": {"/home/x/train.py:10 step"},
		// --frames counts frame lines; a "... 1 more lines" line would
		// take the place of the one frame it leaves out, so it is shown.
		"model.py:5 forward": {"/home/x/model.py:5 forward", "/home/x/train.py:10 step"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stacks (-want +got):\n%s", diff)
	}
}

// TestStateCorpus checks that the state at the peak and at the OOM of the
// real leak_train and oom snapshots shows what filled the memory.
func TestStateCorpus(t *testing.T) {
	dir := sharedSnapshots(t)
	for _, tc := range []struct {
		file string
		at   string
		want []string
	}{
		// leak_train: the planted leaks are the activations kept by
		// losses.append(loss) (allocated under Net.forward, snapgen.py
		// 161-162, called from 173) and 10 copies of 4 MiB from line 180.
		{"torch2.11/leak_train/snapshot.pickle", "peak", []string{
			"/srv/experiments/g/snapgen.py:161 forward", "/srv/experiments/g/snapgen.py:173 leak_train",
			" 40.0 MiB in 10 allocations\n    /srv/experiments/g/snapgen.py:180 leak_train",
		}},
		// oom: torch said "Tried to allocate 128.00 MiB ... 136.13 GiB is
		// free ... 783.00 KiB is reserved by PyTorch but unallocated".
		{"torch2.11/oom/snapshot.pickle", "oom", []string{
			"OOM: a request of 128.0 MiB (large pool, stream 0) failed",
			"free on the device (cudaMemGetInfo):    136.1 GiB",
			"| Free in segments | 783.0 KiB |",
		}},
		// stacks="all": C++-only stacks from the autograd thread are named
		// by their operator and autograd node, not by the unwinder or the
		// allocator.
		{"torch2.11/two_devices/snapshot.pickle", "peak", []string{
			"| S5    |           2 | 64.0 MiB | at::meta::structured_mm::meta (in AddmmBackward0)",
			"S7: 32.0 MiB in 1 allocation\n    at::cuda::setWorkspaceForHandle\n    at::cuda::getCurrentCUDABlasHandle\n",
		}},
		// Full C++ template signatures made lines 1031 characters wide.
		{"public/p33-newest-fields-training.pickle", "peak", []string{
			"| S1    |         664 |   4.8 GiB | <no stack recorded>",
			"| S2    |         169 |   1.5 GiB | at::native::new_empty_strided_symint (in AccumulateGrad)",
			"S2: 1.5 GiB in 169 allocations\n    (dispatch) empty_strided\n    at::native::new_empty_strided_symint\n",
		}},
	} {
		s, err := snapshot.Load(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		r, err := replay.Run(s, 0, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		i := r.PeakIndex
		if tc.at == "oom" {
			i = r.OOMs[len(r.OOMs)-1]
		}
		st, err := r.StateAt(i)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := WriteState(&buf, NewStateView(s, r, st, tc.at, StateOptions{Top: 10, Frames: 12})); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(buf.String(), w) {
				t.Errorf("%s --at %s: output lacks %q:\n%s", tc.file, tc.at, w, buf.String())
			}
		}
		stacks := false
		lines := 0
		for _, l := range strings.Split(buf.String(), "\n") {
			if len(l) > 160 {
				t.Errorf("%s: line of %d characters: %q", tc.file, len(l), l)
			}
			for _, bad := range []string{"unwind::unwind", "gather_with_cpp", "CachingAllocator::", "at::detail::empty"} {
				if strings.Contains(l, bad) {
					t.Errorf("%s: line shows %q: %q", tc.file, bad, l)
				}
			}
			switch {
			case strings.HasPrefix(l, "Stacks ("):
				stacks = true
			case stacks && strings.HasPrefix(l, "    "):
				if lines++; lines > 12+1 { // 12 frame lines and "... N more lines"
					t.Errorf("%s: more than --frames 12 lines in a stack: %q", tc.file, l)
				}
			default:
				lines = 0
				stacks = stacks && l != ""
			}
		}
	}
}
