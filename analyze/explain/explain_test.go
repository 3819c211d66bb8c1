package explain

import (
	"testing"

	"github.com/snapview/snapview/analyze/allocator"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

const mib = 1 << 20

// vllmLoad is the loading pattern of vLLM#41268 as a trace: per layer a
// 530 MiB scratch and a 530 MiB result (each its own segment), the six
// scratches freed together, then per layer a 270 MiB weight that lands
// in a cached 530 MiB block and splits it, then a 2 GiB request that
// fails (device_free 100 GiB: a cap). Stacks: the weights' is 1, the
// rest 0.
func vllmLoad() *snapshot.Snapshot {
	var tr []snapshot.TraceEntry
	add := func(a snapshot.Action, addr snapshot.Addr, size int64, stack snapshot.StackID) {
		tr = append(tr, snapshot.TraceEntry{Action: a, Addr: addr, Size: size, Stack: stack, TimeUS: int64(len(tr)) * 10, Flags: snapshot.FlagTime})
	}
	scratch := func(i int) snapshot.Addr { return snapshot.Addr(1<<40 + i*(1<<32)) }
	result := func(i int) snapshot.Addr { return snapshot.Addr(1<<41 + i*(1<<32)) }
	for i := range 6 {
		add(snapshot.ActionSegmentAlloc, scratch(i), 530*mib, 0)
		add(snapshot.ActionAlloc, scratch(i), 530*mib, 0)
		add(snapshot.ActionSegmentAlloc, result(i), 530*mib, 0)
		add(snapshot.ActionAlloc, result(i), 530*mib, 0)
	}
	for i := range 6 {
		add(snapshot.ActionFreeRequested, scratch(i), 530*mib, 0)
		add(snapshot.ActionFreeCompleted, scratch(i), 530*mib, 0)
	}
	for i := range 6 {
		add(snapshot.ActionAlloc, scratch(i), 270*mib, 1)
	}
	add(snapshot.ActionOOM, 100<<30, 2048*mib, 0)
	s := &snapshot.Snapshot{Traces: [][]snapshot.TraceEntry{tr}, HasDeviceTraces: true,
		Frames: []snapshot.Frame{{}, {Filename: "loader.py", Line: 42, Name: "load_weights"}},
		Stacks: [][]snapshot.FrameID{nil, {1}}}
	c, _ := replay.Complete(s)
	return c
}

// run explains device 0 of s as analysis.File.Explain does, without the
// recording's inference.
func run(t *testing.T, s *snapshot.Snapshot) *Device {
	t.Helper()
	r, err := replay.Run(s, 0, replay.Options{States: OOMEntries(s.Traces[0])})
	if err != nil {
		t.Fatal(err)
	}
	in := &Input{Snap: s, Replay: r}
	for _, st := range r.States {
		if st.Entry != nil && st.Entry.Action == snapshot.ActionOOM {
			in.OOMStates = append(in.OOMStates, st)
		}
	}
	simulate := func(o whatif.Options) (*whatif.Result, error) { return whatif.Analyze(s, 0, r, o) }
	if NeedsWhatif(r) {
		if in.Whatif, err = simulate(whatif.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	d := Explain(*in)
	Unsplit(in, d, Options{}, simulate)
	return d
}

// TestVLLMLoadBlockers: the six weights are the blockers (release: each
// pins a 530 MiB segment, stranding 260 MiB), and the OOM is the cap's.
func TestVLLMLoadBlockers(t *testing.T) {
	d := run(t, vllmLoad())
	var oom, bl *Finding
	for k := range d.Findings {
		switch f := &d.Findings[k]; f.Kind {
		case KindOOMCap:
			oom = f
		case KindBlockers:
			bl = f
		}
	}
	if oom == nil || bl == nil {
		t.Fatalf("findings %+v: want oom-cap and blockers", d.Findings)
	}
	if bl.Mode != "release" || len(bl.Blockers) == 0 {
		t.Fatalf("blockers %+v: want release mode", bl)
	}
	b := bl.Blockers[0]
	if b.Stack != 1 || b.Count != 6 || b.Bytes != 6*270*mib || b.Stranded != 6*260*mib || b.Segments != 6 {
		t.Errorf("top blocker %+v: want the six 270 MiB weights of stack 1 stranding 6 x 260 MiB in 6 segments", b)
	}
	if g, _ := bl.Figure("stranded_bytes"); g.Value != 6*260*mib {
		t.Errorf("stranded %d, want %d", g.Value, 6*260*mib)
	}
	if bl.Setting != "max_split_size_mb:20" || bl.SettingPeak == 0 {
		t.Errorf("blockers' setting %q (peak %d): want max_split_size_mb:20 simulated", bl.Setting, bl.SettingPeak)
	}
	t.Logf("blockers' setting %q: peak reserved %d, fits %v (at the cap's lower bound %d)", bl.Setting, bl.SettingPeak, bl.SettingFits, oom.SettingPeak)
}

func TestMinWindow(t *testing.T) {
	free := func(n int64) block { return block{size: n} }
	live := func(n int64) block { return block{size: n, live: true} }
	tests := []struct {
		name string
		bs   []block
		need int64
		ok   bool
		lo   int
		hi   int
		n    int
	}{
		{"one free block", []block{live(5), free(10), live(5)}, 10, true, 1, 2, 0},
		{"one small blocker", []block{free(6), live(1), free(6), live(10), free(3)}, 12, true, 0, 3, 1},
		{"fewest blockers win", []block{free(4), live(1), free(4), live(1), free(4), live(1), free(20)}, 20, true, 6, 7, 0},
		{"all live: not a blocker", []block{live(10), live(10)}, 15, false, 0, 0, 0},
		{"too small", []block{free(5), live(1)}, 10, false, 0, 0, 0},
	}
	for _, tt := range tests {
		w, ok := minWindow(tt.bs, tt.need)
		if ok != tt.ok || ok && (w.lo != tt.lo || w.hi != tt.hi || w.live != tt.n) {
			t.Errorf("%s: got %+v %v, want [%d,%d) with %d live, %v", tt.name, w, ok, tt.lo, tt.hi, tt.n, tt.ok)
		}
	}
}

// TestUnsplitWeighsFragmentation: where fragmentation is the cause (an
// oom-fragmentation, a reserved gap of split remainders),
// max_split_size_mb:20 takes the finding's setting only when whatif's
// rule prefers it to the best candidate; other kinds keep theirs.
func TestUnsplitWeighsFragmentation(t *testing.T) {
	s := vllmLoad()
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := func(conf string, peak int64, ooms int) whatif.Row {
		c, err := allocator.Parse(conf)
		if err != nil {
			t.Fatal(err)
		}
		return whatif.Row{Conf: conf, Config: c, Outcome: whatif.Outcome{PeakReserved: peak, OOMs: ooms}}
	}
	cand := whatif.Result{Rows: []whatif.Row{row("", 8<<30, 1), row("expandable_segments:True", 7<<30, 0)}, Best: 1}
	tests := []struct {
		name     string
		kind     Kind
		nonrel   int64 // the reserved gap's non_releasable_bytes
		ms20Peak int64
		ms20OOMs int
		want     string
	}{
		{"fragmentation OOM, max_split 20 reserves less", KindOOMFragmentation, 0, 6 << 30, 0, "max_split_size_mb:20"},
		{"fragmentation OOM, max_split 20 reserves more", KindOOMFragmentation, 0, 9 << 30, 0, "expandable_segments:True"},
		{"fragmentation OOM, max_split 20 fails", KindOOMFragmentation, 0, 6 << 30, 1, "expandable_segments:True"},
		{"gap of split remainders", KindReservedGap, 1 << 30, 6 << 30, 0, "max_split_size_mb:20"},
		{"gap without split remainders", KindReservedGap, 0, 6 << 30, 0, "expandable_segments:True"},
		{"cap OOM", KindOOMCap, 0, 6 << 30, 0, "expandable_segments:True"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := cand
			in := &Input{Snap: s, Replay: r, Whatif: &w}
			f := Finding{Kind: tt.kind}
			if tt.kind == KindReservedGap {
				f.add("non_releasable_bytes", tt.nonrel, Bytes, 0)
			}
			setBest(&f, *in)
			d := &Device{Findings: []Finding{f}}
			calls := 0
			Unsplit(in, d, Options{}, func(o whatif.Options) (*whatif.Result, error) {
				calls++
				if len(o.Confs) != 1 || o.Confs[0] != "max_split_size_mb:20" {
					t.Errorf("simulated %q, want max_split_size_mb:20", o.Confs)
				}
				return &whatif.Result{Rows: []whatif.Row{cand.Rows[0], row("max_split_size_mb:20", tt.ms20Peak, tt.ms20OOMs)}, Best: -1}, nil
			})
			if got := d.Findings[0].Setting; got != tt.want {
				t.Errorf("setting %q, want %q", got, tt.want)
			}
			if calls > 1 {
				t.Errorf("%d simulations, want at most one", calls)
			}
		})
	}
}
