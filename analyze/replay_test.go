package analyze

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot"
)

// Builders for hand-made snapshots.

const (
	tMiB = int64(1 << 20)
	tSeg = snapshot.Addr(0x7f0000000000)
)

func ev(a snapshot.Action, addr snapshot.Addr, size int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: a, Addr: addr, Size: size}
}

func blk(addr snapshot.Addr, size, req int64, st snapshot.BlockState) snapshot.Block {
	return snapshot.Block{Address: addr, Size: size, RequestedSize: req, State: st}
}

func seg(addr snapshot.Addr, size int64, typ string, blocks ...snapshot.Block) snapshot.Segment {
	return snapshot.Segment{Address: addr, TotalSize: size, Type: typ, Blocks: blocks}
}

func snap(segs []snapshot.Segment, trace ...snapshot.TraceEntry) *snapshot.Snapshot {
	return &snapshot.Snapshot{
		Segments: segs, Traces: [][]snapshot.TraceEntry{trace}, HasDeviceTraces: true,
		Settings: &snapshot.AllocatorSettings{MaxSplitSize: -1},
		Stacks:   [][]snapshot.FrameID{nil},
	}
}

var (
	alloc  = snapshot.ActionAlloc
	freeRq = snapshot.ActionFreeRequested
	freeOK = snapshot.ActionFreeCompleted
	segAl  = snapshot.ActionSegmentAlloc
	segFr  = snapshot.ActionSegmentFree
	segMap = snapshot.ActionSegmentMap
	segUnm = snapshot.ActionSegmentUnmap
	oom    = snapshot.ActionOOM
	aAlloc = snapshot.StateActiveAllocated
	aPend  = snapshot.StateActivePendingFree
	inact  = snapshot.StateInactive
)

func TestReplaySynthetic(t *testing.T) {
	expandable := snap(nil,
		ev(segMap, tSeg, 20*tMiB),
		ev(alloc, tSeg, 5*tMiB),
		ev(alloc, tSeg+snapshot.Addr(5*tMiB), 15*tMiB),
		ev(freeRq, tSeg, 5*tMiB), ev(freeOK, tSeg, 5*tMiB),
		ev(freeRq, tSeg+snapshot.Addr(5*tMiB), 15*tMiB), ev(freeOK, tSeg+snapshot.Addr(5*tMiB), 15*tMiB),
		ev(segUnm, tSeg, 20*tMiB),
	)
	expandable.Settings.ExpandableSegments = true
	pow2 := snap([]snapshot.Segment{seg(tSeg, 12*tMiB, "large", blk(tSeg, 12*tMiB, 10*tMiB+1, aAlloc))},
		ev(segAl, tSeg, 12*tMiB), ev(alloc, tSeg, 10*tMiB+1))
	pow2.Settings.RoundupPower2Divisions = map[int64]int64{8: 4, 16: 4}

	for _, tc := range []struct {
		name   string
		s      *snapshot.Snapshot
		seeded bool
		want   map[string]int64 // a subset of memory_stats() flat keys
		allocs []Allocation
	}{
		{
			name: "small pool: split, merge, inactive_split",
			s: snap(nil,
				ev(segAl, tSeg, 2*tMiB),
				ev(alloc, tSeg, 1000),     // 1024 bytes, splits the segment
				ev(alloc, tSeg+1024, 600), // 1024 bytes, shrinks the split free block
				ev(freeRq, tSeg, 1000), ev(freeOK, tSeg, 1000),
				ev(freeRq, tSeg+1024, 600), ev(freeOK, tSeg+1024, 600), // merges both neighbours
				ev(segFr, tSeg, 2*tMiB),
			),
			want: map[string]int64{
				"allocated_bytes.small_pool.peak": 2048, "allocated_bytes.all.allocated": 2048,
				"allocated_bytes.all.freed": 2048, "allocated_bytes.all.current": 0,
				"requested_bytes.all.peak": 1600,
				"inactive_split.all.peak":  2, "inactive_split.all.allocated": 2, "inactive_split.all.freed": 2,
				"inactive_split_bytes.all.peak":      2*tMiB - 1024,
				"inactive_split_bytes.all.allocated": 2 * tMiB, "inactive_split_bytes.all.freed": 2 * tMiB,
				"segment.small_pool.peak": 1, "segment.small_pool.current": 0, "reserved_bytes.all.freed": 2 * tMiB,
				"num_device_alloc": 1, "num_device_free": 1, "num_ooms": 0,
			},
			allocs: []Allocation{
				{Addr: tSeg, Size: 1024, Requested: 1000, AllocIndex: 1, FreeRequested: 3, FreeCompleted: 4},
				{Addr: tSeg + 1024, Size: 1024, Requested: 600, AllocIndex: 2, FreeRequested: 5, FreeCompleted: 6},
			},
		},
		{
			name: "large pool: a remainder of 1 MiB or less is not split",
			s: snap([]snapshot.Segment{seg(tSeg, 20*tMiB, "large", blk(tSeg, 20*tMiB, 19*tMiB+tMiB/2, aAlloc))},
				ev(segAl, tSeg, 20*tMiB), ev(alloc, tSeg, 19*tMiB+tMiB/2)),
			want: map[string]int64{
				"allocated_bytes.large_pool.current": 20 * tMiB, "requested_bytes.large_pool.current": 19*tMiB + tMiB/2,
				"inactive_split.all.peak": 0, "inactive_split_bytes.all.peak": 0,
			},
			allocs: []Allocation{{Addr: tSeg, Size: 20 * tMiB, Requested: 19*tMiB + tMiB/2, Large: true, AllocIndex: 1, FreeRequested: -1, FreeCompleted: -1}},
		},
		{
			name: "large pool: a remainder over 1 MiB is split",
			s: snap([]snapshot.Segment{seg(tSeg, 20*tMiB, "large", blk(tSeg, 18*tMiB, 18*tMiB, aAlloc), blk(tSeg+snapshot.Addr(18*tMiB), 2*tMiB, 0, inact))},
				ev(segAl, tSeg, 20*tMiB), ev(alloc, tSeg, 18*tMiB)),
			want: map[string]int64{
				"allocated_bytes.large_pool.current": 18 * tMiB,
				"inactive_split.large_pool.current":  1, "inactive_split_bytes.large_pool.current": 2 * tMiB,
			},
			allocs: []Allocation{{Addr: tSeg, Size: 18 * tMiB, Requested: 18 * tMiB, Large: true, AllocIndex: 1, FreeRequested: -1, FreeCompleted: -1}},
		},
		{
			name: "free_requested drops allocated, free_completed drops active",
			s: snap([]snapshot.Segment{seg(tSeg, 2*tMiB, "small", blk(tSeg, 512, 100, aPend), blk(tSeg+512, 2*tMiB-512, 0, inact))},
				ev(segAl, tSeg, 2*tMiB), ev(alloc, tSeg, 100), ev(freeRq, tSeg, 100)),
			want: map[string]int64{
				"allocated_bytes.all.current": 0, "allocated_bytes.all.freed": 512,
				"active_bytes.all.current": 512, "requested_bytes.all.current": 100, "active.all.current": 1,
			},
			allocs: []Allocation{{Addr: tSeg, Size: 512, Requested: 100, AllocIndex: 1, FreeRequested: 2, FreeCompleted: -1}},
		},
		{
			name: "a free of a block older than the trace seeds the state",
			s: snap([]snapshot.Segment{seg(tSeg, 2*tMiB, "small", blk(tSeg, 2*tMiB, 0, inact))},
				ev(freeRq, tSeg, 4096), ev(freeOK, tSeg, 4096)),
			seeded: true,
			want: map[string]int64{
				"allocated_bytes.all.peak": 4096, "allocated_bytes.all.allocated": 4096, "allocated_bytes.all.freed": 4096,
				"inactive_split.all.peak": 1, "inactive_split.all.current": 0, "reserved_bytes.all.current": 2 * tMiB,
			},
			allocs: []Allocation{{Addr: tSeg, Size: 4096, Requested: 4096, AllocIndex: -1, FreeRequested: 0, FreeCompleted: 1}},
		},
		{
			name: "expandable segment: map, alloc, free, unmap",
			s:    expandable,
			want: map[string]int64{
				"reserved_bytes.large_pool.peak": 20 * tMiB, "reserved_bytes.all.current": 0,
				"segment.all.peak": 0, "inactive_split.all.peak": 0,
				"allocated_bytes.large_pool.peak": 20 * tMiB, "num_device_alloc": 1, "num_device_free": 1,
			},
			allocs: []Allocation{
				{Addr: tSeg, Size: 5 * tMiB, Requested: 5 * tMiB, Large: true, AllocIndex: 1, FreeRequested: 3, FreeCompleted: 4},
				{Addr: tSeg + snapshot.Addr(5*tMiB), Size: 15 * tMiB, Requested: 15 * tMiB, Large: true, AllocIndex: 2, FreeRequested: 5, FreeCompleted: 6},
			},
		},
		{
			name: "roundup_power2_divisions",
			s:    pow2,
			want: map[string]int64{"allocated_bytes.all.current": 12 * tMiB, "requested_bytes.all.current": 10*tMiB + 1},
			allocs: []Allocation{
				{Addr: tSeg, Size: 12 * tMiB, Requested: 10*tMiB + 1, Large: true, AllocIndex: 1, FreeRequested: -1, FreeCompleted: -1},
			},
		},
		{
			// skip_actions=["free_requested"]: torch records no
			// free_requested, so each free_completed is the free too.
			name: "skip free_requested: from the start",
			s: snap([]snapshot.Segment{seg(tSeg, 2*tMiB, "small", blk(tSeg, 1024, 600, aAlloc), blk(tSeg+1024, 2*tMiB-1024, 0, inact))},
				ev(segAl, tSeg, 2*tMiB),
				ev(alloc, tSeg, 1000),
				ev(alloc, tSeg+1024, 600),
				ev(freeOK, tSeg, 1000),
				ev(alloc, tSeg, 600),
				ev(freeOK, tSeg+1024, 600),
			),
			want: map[string]int64{
				"allocated_bytes.all.peak": 2048, "allocated_bytes.all.allocated": 3072,
				"allocated_bytes.all.freed": 2048, "allocation.all.current": 1, "allocation.all.freed": 2,
				"active_bytes.all.peak": 2048, "requested_bytes.all.peak": 1600,
			},
			allocs: []Allocation{
				{Addr: tSeg, Size: 1024, Requested: 1000, AllocIndex: 1, FreeRequested: 3, FreeCompleted: 3},
				{Addr: tSeg + 1024, Size: 1024, Requested: 600, AllocIndex: 2, FreeRequested: 5, FreeCompleted: 5},
				{Addr: tSeg, Size: 1024, Requested: 600, AllocIndex: 4, FreeRequested: -1, FreeCompleted: -1},
			},
		},
		{
			// The same recording started late: undoing a free_completed
			// gives back an allocated block (no free_requested to undo).
			name: "skip free_requested: started late",
			s: snap([]snapshot.Segment{seg(tSeg, 2*tMiB, "small", blk(tSeg, 1024, 600, aAlloc), blk(tSeg+1024, 2*tMiB-1024, 0, inact))},
				ev(freeOK, tSeg, 1000),
				ev(alloc, tSeg, 600),
				ev(freeOK, tSeg+1024, 600),
			),
			seeded: true,
			want: map[string]int64{
				"allocated_bytes.all.peak": 2048, "allocated_bytes.all.freed": 2048, "allocation.all.current": 1,
			},
			allocs: []Allocation{
				{Addr: tSeg, Size: 1024, Requested: 1000, AllocIndex: -1, FreeRequested: 0, FreeCompleted: 0},
				{Addr: tSeg + 1024, Size: 1024, Requested: 600, AllocIndex: -1, FreeRequested: 2, FreeCompleted: 2},
				{Addr: tSeg, Size: 1024, Requested: 600, AllocIndex: 1, FreeRequested: -1, FreeCompleted: -1},
			},
		},
		{
			name:   "oom",
			s:      snap(nil, snapshot.TraceEntry{Action: oom, Addr: 1 << 30, Size: 400 << 30}),
			want:   map[string]int64{"num_ooms": 1, "num_alloc_retries": 1},
			allocs: []Allocation{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Replay(tc.s, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Check.Equal {
				t.Errorf("end check failed:\n%s", strings.Join(r.Check.Differences, "\n"))
			}
			if r.Seeded != tc.seeded {
				t.Errorf("Seeded = %t, want %t", r.Seeded, tc.seeded)
			}
			got := r.Stats.Flat()
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d", k, got[k], v)
				}
			}
			if diff := cmp.Diff(tc.allocs, r.Allocs); diff != "" {
				t.Errorf("Allocs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStateAt(t *testing.T) {
	s := snap(nil,
		ev(segAl, tSeg, 2*tMiB),
		ev(alloc, tSeg, 1000),
		ev(alloc, tSeg+1024, 3000),
		snapshot.TraceEntry{Action: oom, Addr: 5 << 30, Size: 400 << 30, TimeUS: 30},
		ev(freeRq, tSeg, 1000), ev(freeOK, tSeg, 1000),
	)
	for i := range s.Traces[0] {
		s.Traces[0][i].TimeUS = int64(10 * i)
	}
	r, err := Replay(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.PeakIndex != 2 {
		t.Errorf("PeakIndex = %d, want 2", r.PeakIndex)
	}
	if want := []int{3}; !cmp.Equal(r.OOMs, want) {
		t.Errorf("OOMs = %v, want %v", r.OOMs, want)
	}
	st, err := r.StateAt(3)
	if err != nil {
		t.Fatal(err)
	}
	wantSegs := []StateSegment{{
		Addr: tSeg, Size: 2 * tMiB, Blocks: []StateBlock{
			{Addr: tSeg, Size: 1024, Requested: 1000, State: aAlloc, Alloc: 0},
			{Addr: tSeg + 1024, Size: 3072, Requested: 3000, State: aAlloc, Alloc: 1},
			{Addr: tSeg + 4096, Size: 2*tMiB - 4096, State: inact, Alloc: -1},
		},
	}}
	if diff := cmp.Diff(wantSegs, st.Segments); diff != "" {
		t.Errorf("StateAt(3).Segments (-want +got):\n%s", diff)
	}
	wantFree := []FreeSpace{{FreeBytes: 2*tMiB - 4096, Blocks: 1, Largest: 2*tMiB - 4096, Reserved: 2 * tMiB}}
	if diff := cmp.Diff(wantFree, st.Free); diff != "" {
		t.Errorf("StateAt(3).Free (-want +got):\n%s", diff)
	}
	wantOOM := &OOMInfo{Size: 400 << 30, Large: true, DeviceFree: 5 << 30}
	if diff := cmp.Diff(wantOOM, st.OOM); diff != "" {
		t.Errorf("StateAt(3).OOM (-want +got):\n%s", diff)
	}
	if got := st.Stats.AllocatedBytes[PoolAll].Current; got != 4096 {
		t.Errorf("StateAt(3) allocated = %d, want 4096", got)
	}
	before, err := r.StateAt(-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Segments) != 0 || before.Entry != nil {
		t.Errorf("StateAt(-1) = %d segments, entry %v; want none", len(before.Segments), before.Entry)
	}
	for _, i := range []int{-2, len(s.Traces[0])} {
		if _, err := r.StateAt(i); err == nil {
			t.Errorf("StateAt(%d): no error", i)
		}
	}
	for _, tc := range []struct{ us, want int64 }{{-1, -1}, {0, 0}, {15, 1}, {50, 5}, {1000, 5}} {
		if got := r.IndexAtTime(tc.us); int64(got) != tc.want {
			t.Errorf("IndexAtTime(%d) = %d, want %d", tc.us, got, tc.want)
		}
	}
}

func TestReplayErrors(t *testing.T) {
	s := snap(nil)
	for _, dev := range []int{-1, 0, 3} {
		if _, err := Replay(s, dev); err == nil {
			t.Errorf("Replay(empty, %d): no error", dev)
		}
	}
}

// sharedSnapshot is one real snapshot file of ../shared with the
// memory_stats() recorded next to it, when there is one.
type sharedSnapshot struct {
	name      string
	path      string
	stats     []*MemoryStats
	fromStart bool // meta.json ground_truth.recorded_from_start
}

func sharedSnapshots(t *testing.T) []sharedSnapshot {
	t.Helper()
	dir := sharedOrSkip(t)
	var out []sharedSnapshot
	dirs, _ := filepath.Glob(filepath.Join(dir, "torch2.11", "*"))
	for _, d := range dirs {
		p := filepath.Join(d, "snapshot.pickle")
		if _, err := os.Stat(p); err != nil {
			continue
		}
		ss := sharedSnapshot{name: "torch2.11/" + filepath.Base(d), path: p}
		for _, meta := range []string{"meta.json", "snapshot.meta.json"} {
			if data, err := os.ReadFile(filepath.Join(d, meta)); err == nil {
				var m struct {
					GroundTruth struct {
						RecordedFromStart bool `json:"recorded_from_start"`
					} `json:"ground_truth"`
				}
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatalf("%s: %v", meta, err)
				}
				ss.fromStart = m.GroundTruth.RecordedFromStart
			}
		}
		for _, st := range []string{"stats.json", "snapshot.stats.json"} {
			if data, err := os.ReadFile(filepath.Join(d, st)); err == nil {
				ss.stats, err = ParseStatsJSON(data, 0)
				if err != nil {
					t.Fatalf("%s: %v", st, err)
				}
			}
		}
		out = append(out, ss)
	}
	probes, _ := filepath.Glob(filepath.Join(dir, "torch2.11-probe", "*.pickle"))
	for _, p := range probes {
		ss := sharedSnapshot{name: "probe/" + filepath.Base(p), path: p}
		if data, err := os.ReadFile(strings.TrimSuffix(p, ".pickle") + ".extra.json"); err == nil {
			ss.stats, err = ParseStatsJSON(data, 0)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
		}
		out = append(out, ss)
	}
	public, _ := filepath.Glob(filepath.Join(dir, "public", "*"))
	for _, p := range public {
		out = append(out, sharedSnapshot{name: "public/" + filepath.Base(p), path: p})
	}
	return out
}

// TestReplayMatchesMemoryStats compares the replayed memory_stats() with
// torch's at dump time, figure by figure. On traces recorded from the first
// allocation every figure must be equal, except num_alloc_retries (a lower
// bound) and num_sync_all_streams (not derivable). Elsewhere the current
// figures must be equal and the lower bounds must not exceed torch's.
func TestReplayMatchesMemoryStats(t *testing.T) {
	var matched, total int
	for _, ss := range sharedSnapshots(t) {
		if ss.stats == nil {
			continue
		}
		s, err := snapshot.Load(ss.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range ss.stats {
			r, err := Replay(s, want.Device)
			if err != nil {
				t.Fatalf("%s: %v", ss.name, err)
			}
			exact := !r.Seeded && len(deviceTrace(s, want.Device)) > 0
			if ss.fromStart && !exact {
				t.Errorf("%s device %d: recorded from start but replay is seeded", ss.name, want.Device)
			}
			wf := want.Flat()
			m := 0
			figs := r.Stats.Figures()
			for _, f := range figs {
				w := wf[f.Key]
				switch {
				case f.Value == w:
					m++
				case f.Key == "num_sync_all_streams":
				case f.Exactness == LowerBound && f.Value <= w:
				case f.Exactness == Unknown:
				default:
					t.Errorf("%s device %d: %s = %d (%v), torch has %d", ss.name, want.Device, f.Key, f.Value, f.Exactness, w)
				}
			}
			t.Logf("%s device %d: %d/%d figures equal (exact history: %t)", ss.name, want.Device, m, len(figs), exact)
			matched += m
			total += len(figs)
		}
	}
	t.Logf("all: %d/%d figures equal", matched, total)
}

// TestReplayProperties checks every real file with segments or a trace:
// the replayed end state equals the file's; no figure goes negative; at
// sampled moments (before the first entry, at the peak, at every OOM, at
// the end and at a few points between) no two live blocks overlap and the
// blocks of each segment tile it exactly.
func TestReplayProperties(t *testing.T) {
	var replays, withTrace, equal int
	defer func() {
		t.Logf("%d device replays, %d with a trace; %d end checks equal", replays, withTrace, equal)
	}()
	for _, ss := range sharedSnapshots(t) {
		s, err := snapshot.Load(ss.path)
		if err != nil {
			t.Fatalf("%s: %v", ss.name, err)
		}
		for _, dev := range s.Devices() {
			r, err := Replay(s, dev)
			if err != nil {
				t.Fatalf("%s device %d: %v", ss.name, dev, err)
			}
			replays++
			if len(r.Allocated) > 0 {
				withTrace++
			}
			if r.Check.Equal {
				equal++
			} else {
				t.Errorf("%s device %d: end state differs from the file:\n%s", ss.name, dev, strings.Join(r.Check.Differences, "\n"))
			}
			for _, f := range r.Stats.Figures() {
				if f.Value < 0 && f.Key != "max_split_size" {
					t.Errorf("%s device %d: %s = %d", ss.name, dev, f.Key, f.Value)
				}
			}
			for name, series := range map[string][]int64{"allocated": r.Allocated, "active": r.Active, "reserved": r.Reserved, "requested": r.Requested} {
				for i, v := range series {
					if v < 0 {
						t.Errorf("%s device %d: %s[%d] = %d", ss.name, dev, name, i, v)
						break
					}
				}
			}
			n := len(r.Allocated)
			at := append([]int{-1, r.PeakIndex, n - 1, n / 4, n / 2, 3 * n / 4}, r.OOMs...)
			for _, i := range at {
				if i < -1 || i >= n {
					continue
				}
				st, err := r.StateAt(i)
				if err != nil {
					t.Fatalf("%s device %d: StateAt(%d): %v", ss.name, dev, i, err)
				}
				if msg := checkTiling(st); msg != "" {
					t.Errorf("%s device %d entry %d: %s", ss.name, dev, i, msg)
				}
			}
		}
	}
}

// checkTiling returns what is wrong with the layout of st, "" if nothing.
func checkTiling(st *State) string {
	var prevEnd snapshot.Addr
	for k, s := range st.Segments {
		if k > 0 && s.Addr < prevEnd {
			return "segment " + s.Addr.String() + " overlaps the previous one"
		}
		next := s.Addr
		for _, b := range s.Blocks {
			if b.Addr != next || b.Size <= 0 {
				return "segment " + s.Addr.String() + ": block " + b.Addr.String() + " does not follow the previous one"
			}
			next += snapshot.Addr(b.Size)
		}
		if next != s.Addr+snapshot.Addr(s.Size) {
			return "segment " + s.Addr.String() + ": blocks do not add up to its size"
		}
		prevEnd = next
	}
	return ""
}

// syntheticChurn builds a snapshot of n alloc/free pairs over a few
// segments, recorded from the start, for BenchmarkReplay.
func syntheticChurn(n int) *snapshot.Snapshot {
	var trace []snapshot.TraceEntry
	const nseg = 8
	for k := range nseg {
		trace = append(trace, ev(segAl, tSeg+snapshot.Addr(k)*snapshot.Addr(64*tMiB), 64*tMiB))
	}
	type live struct {
		addr snapshot.Addr
		size int64
	}
	var lives []live
	next := make([]snapshot.Addr, nseg)
	for i := 0; i < n; i++ {
		k := i % nseg
		base := tSeg + snapshot.Addr(k)*snapshot.Addr(64*tMiB)
		size := 2*tMiB + int64(i%7)*tMiB
		if int64(next[k])+size > 64*tMiB || len(lives) > 16 {
			for _, l := range lives {
				trace = append(trace, ev(freeRq, l.addr, l.size), ev(freeOK, l.addr, l.size))
			}
			lives = lives[:0]
			clear(next)
		}
		a := base + next[k]
		trace = append(trace, ev(alloc, a, size))
		lives = append(lives, live{a, size})
		next[k] += snapshot.Addr(size)
	}
	var segs []snapshot.Segment
	for k := range nseg {
		base := tSeg + snapshot.Addr(k)*snapshot.Addr(64*tMiB)
		var blocks []snapshot.Block
		off := snapshot.Addr(0)
		for _, l := range lives {
			if l.addr >= base && l.addr < base+snapshot.Addr(64*tMiB) {
				blocks = append(blocks, blk(l.addr, l.size, l.size, aAlloc))
				off = l.addr - base + snapshot.Addr(l.size)
			}
		}
		if int64(off) < 64*tMiB {
			blocks = append(blocks, blk(base+off, 64*tMiB-int64(off), 0, inact))
		}
		segs = append(segs, seg(base, 64*tMiB, "large", blocks...))
	}
	return snap(segs, trace...)
}

// checkInvariants returns what is wrong with the machine's state, "" if
// nothing: the blocks of each segment tile it, two free blocks never touch
// (free_block merges them), the indexes agree with the lists, segments do
// not overlap, and no current figure is negative.
func (m *machine) checkInvariants() string {
	nblocks := 0
	var prevEnd snapshot.Addr
	for _, si := range m.liveSegments() {
		s := &m.segs[si]
		if s.addr < prevEnd {
			return fmt.Sprintf("segment %v overlaps the previous one", s.addr)
		}
		prevEnd = s.end()
		if m.segAt[s.addr] != si {
			return fmt.Sprintf("segment %v: not indexed by its address", s.addr)
		}
		if s.expandable && m.segEnd[s.end()] != si {
			return fmt.Sprintf("segment %v: not indexed by its end", s.addr)
		}
		next, n, prev := s.addr, int32(0), int32(-1)
		for b := s.head; b >= 0; b = m.blocks[b].next {
			blk := &m.blocks[b]
			switch {
			case blk.addr != next || blk.size <= 0:
				return fmt.Sprintf("segment %v: block %v (%d bytes) does not follow %v", s.addr, blk.addr, blk.size, next)
			case blk.seg != si || blk.prev != prev:
				return fmt.Sprintf("segment %v: block %v has wrong links", s.addr, blk.addr)
			case !m.blockAt.is(blk.addr, b):
				return fmt.Sprintf("segment %v: block %v not indexed", s.addr, blk.addr)
			case prev >= 0 && blk.state == snapshot.StateInactive && m.blocks[prev].state == snapshot.StateInactive:
				return fmt.Sprintf("segment %v: free blocks %v and %v touch", s.addr, m.blocks[prev].addr, blk.addr)
			}
			next += snapshot.Addr(blk.size)
			prev = b
			n++
		}
		if next != s.end() || n != s.nblocks || s.tail != prev {
			return fmt.Sprintf("segment %v: blocks end at %v, %d blocks (want %v, %d)", s.addr, next, n, s.end(), s.nblocks)
		}
		nblocks += int(n)
	}
	if nblocks != m.blockAt.len() {
		return fmt.Sprintf("%d blocks in segments, %d indexed", nblocks, m.blockAt.len())
	}
	for _, f := range m.st.pooledFamilies() {
		for p := range NumPools {
			if f.stat[p].Current < 0 {
				return fmt.Sprintf("%s.%v.current = %d", f.key, p, f.stat[p].Current)
			}
		}
	}
	return ""
}

// TestReplayInvariants replays every real file entry by entry and checks
// the state's invariants after each entry (every 97th entry beyond 5,000
// entries).
func TestReplayInvariants(t *testing.T) {
	for _, ss := range sharedSnapshots(t) {
		s, err := snapshot.Load(ss.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range s.Devices() {
			r, err := Replay(s, dev)
			if err != nil {
				t.Fatal(err)
			}
			x := r.newRunner(false)
			if msg := x.m.checkInvariants(); msg != "" {
				t.Errorf("%s device %d before the first entry: %s", ss.name, dev, msg)
				continue
			}
			for i := range x.trace {
				x.step(i)
				if len(x.trace) > 5000 && i%97 != 0 && i != len(x.trace)-1 {
					continue
				}
				if msg := x.m.checkInvariants(); msg != "" {
					t.Errorf("%s device %d after entry %d: %s", ss.name, dev, i, msg)
					break
				}
			}
		}
	}
}
