package replay

import (
	"fmt"
	"os"
	"strings"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/stats"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot"
)

func TestReplaySynthetic(t *testing.T) {
	expandable := Snap(nil,
		Ev(SegMap, SegBase, 20*MiB),
		Ev(Alloc, SegBase, 5*MiB),
		Ev(Alloc, SegBase+snapshot.Addr(5*MiB), 15*MiB),
		Ev(FreeRq, SegBase, 5*MiB), Ev(FreeOK, SegBase, 5*MiB),
		Ev(FreeRq, SegBase+snapshot.Addr(5*MiB), 15*MiB), Ev(FreeOK, SegBase+snapshot.Addr(5*MiB), 15*MiB),
		Ev(SegUnm, SegBase, 20*MiB),
	)
	expandable.Settings.ExpandableSegments = true
	pow2 := Snap([]snapshot.Segment{Seg(SegBase, 12*MiB, "large", Blk(SegBase, 12*MiB, 10*MiB+1, AAlloc))},
		Ev(SegAl, SegBase, 12*MiB), Ev(Alloc, SegBase, 10*MiB+1))
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
			s: Snap(nil,
				Ev(SegAl, SegBase, 2*MiB),
				Ev(Alloc, SegBase, 1000),     // 1024 bytes, splits the segment
				Ev(Alloc, SegBase+1024, 600), // 1024 bytes, shrinks the split free block
				Ev(FreeRq, SegBase, 1000), Ev(FreeOK, SegBase, 1000),
				Ev(FreeRq, SegBase+1024, 600), Ev(FreeOK, SegBase+1024, 600), // merges both neighbours
				Ev(SegFr, SegBase, 2*MiB),
			),
			want: map[string]int64{
				"allocated_bytes.small_pool.peak": 2048, "allocated_bytes.all.allocated": 2048,
				"allocated_bytes.all.freed": 2048, "allocated_bytes.all.current": 0,
				"requested_bytes.all.peak": 1600,
				"inactive_split.all.peak":  2, "inactive_split.all.allocated": 2, "inactive_split.all.freed": 2,
				"inactive_split_bytes.all.peak":      2*MiB - 1024,
				"inactive_split_bytes.all.allocated": 2 * MiB, "inactive_split_bytes.all.freed": 2 * MiB,
				"segment.small_pool.peak": 1, "segment.small_pool.current": 0, "reserved_bytes.all.freed": 2 * MiB,
				"num_device_alloc": 1, "num_device_free": 1, "num_ooms": 0,
			},
			allocs: []Allocation{
				{Addr: SegBase, Size: 1024, Requested: 1000, AllocIndex: 1, FreeRequested: 3, FreeCompleted: 4},
				{Addr: SegBase + 1024, Size: 1024, Requested: 600, AllocIndex: 2, FreeRequested: 5, FreeCompleted: 6},
			},
		},
		{
			name: "large pool: a remainder of 1 MiB or less is not split",
			s: Snap([]snapshot.Segment{Seg(SegBase, 20*MiB, "large", Blk(SegBase, 20*MiB, 19*MiB+MiB/2, AAlloc))},
				Ev(SegAl, SegBase, 20*MiB), Ev(Alloc, SegBase, 19*MiB+MiB/2)),
			want: map[string]int64{
				"allocated_bytes.large_pool.current": 20 * MiB, "requested_bytes.large_pool.current": 19*MiB + MiB/2,
				"inactive_split.all.peak": 0, "inactive_split_bytes.all.peak": 0,
			},
			allocs: []Allocation{{Addr: SegBase, Size: 20 * MiB, Requested: 19*MiB + MiB/2, Large: true, AllocIndex: 1, FreeRequested: -1, FreeCompleted: -1}},
		},
		{
			name: "large pool: a remainder over 1 MiB is split",
			s: Snap([]snapshot.Segment{Seg(SegBase, 20*MiB, "large", Blk(SegBase, 18*MiB, 18*MiB, AAlloc), Blk(SegBase+snapshot.Addr(18*MiB), 2*MiB, 0, Inact))},
				Ev(SegAl, SegBase, 20*MiB), Ev(Alloc, SegBase, 18*MiB)),
			want: map[string]int64{
				"allocated_bytes.large_pool.current": 18 * MiB,
				"inactive_split.large_pool.current":  1, "inactive_split_bytes.large_pool.current": 2 * MiB,
			},
			allocs: []Allocation{{Addr: SegBase, Size: 18 * MiB, Requested: 18 * MiB, Large: true, AllocIndex: 1, FreeRequested: -1, FreeCompleted: -1}},
		},
		{
			name: "free_requested drops allocated, free_completed drops active",
			s: Snap([]snapshot.Segment{Seg(SegBase, 2*MiB, "small", Blk(SegBase, 512, 100, APend), Blk(SegBase+512, 2*MiB-512, 0, Inact))},
				Ev(SegAl, SegBase, 2*MiB), Ev(Alloc, SegBase, 100), Ev(FreeRq, SegBase, 100)),
			want: map[string]int64{
				"allocated_bytes.all.current": 0, "allocated_bytes.all.freed": 512,
				"active_bytes.all.current": 512, "requested_bytes.all.current": 100, "active.all.current": 1,
			},
			allocs: []Allocation{{Addr: SegBase, Size: 512, Requested: 100, AllocIndex: 1, FreeRequested: 2, FreeCompleted: -1}},
		},
		{
			name: "a free of a block older than the trace seeds the state",
			s: Snap([]snapshot.Segment{Seg(SegBase, 2*MiB, "small", Blk(SegBase, 2*MiB, 0, Inact))},
				Ev(FreeRq, SegBase, 4096), Ev(FreeOK, SegBase, 4096)),
			seeded: true,
			want: map[string]int64{
				"allocated_bytes.all.peak": 4096, "allocated_bytes.all.allocated": 4096, "allocated_bytes.all.freed": 4096,
				"inactive_split.all.peak": 1, "inactive_split.all.current": 0, "reserved_bytes.all.current": 2 * MiB,
			},
			allocs: []Allocation{{Addr: SegBase, Size: 4096, Requested: 4096, AllocIndex: -1, FreeRequested: 0, FreeCompleted: 1}},
		},
		{
			name: "expandable segment: map, alloc, free, unmap",
			s:    expandable,
			want: map[string]int64{
				"reserved_bytes.large_pool.peak": 20 * MiB, "reserved_bytes.all.current": 0,
				"segment.all.peak": 0, "inactive_split.all.peak": 0,
				"allocated_bytes.large_pool.peak": 20 * MiB, "num_device_alloc": 1, "num_device_free": 1,
			},
			allocs: []Allocation{
				{Addr: SegBase, Size: 5 * MiB, Requested: 5 * MiB, Large: true, AllocIndex: 1, FreeRequested: 3, FreeCompleted: 4},
				{Addr: SegBase + snapshot.Addr(5*MiB), Size: 15 * MiB, Requested: 15 * MiB, Large: true, AllocIndex: 2, FreeRequested: 5, FreeCompleted: 6},
			},
		},
		{
			name: "roundup_power2_divisions",
			s:    pow2,
			want: map[string]int64{"allocated_bytes.all.current": 12 * MiB, "requested_bytes.all.current": 10*MiB + 1},
			allocs: []Allocation{
				{Addr: SegBase, Size: 12 * MiB, Requested: 10*MiB + 1, Large: true, AllocIndex: 1, FreeRequested: -1, FreeCompleted: -1},
			},
		},
		{
			// skip_actions=["free_requested"]: torch records no
			// free_requested, so each free_completed is the free too.
			name: "skip free_requested: from the start",
			s: Snap([]snapshot.Segment{Seg(SegBase, 2*MiB, "small", Blk(SegBase, 1024, 600, AAlloc), Blk(SegBase+1024, 2*MiB-1024, 0, Inact))},
				Ev(SegAl, SegBase, 2*MiB),
				Ev(Alloc, SegBase, 1000),
				Ev(Alloc, SegBase+1024, 600),
				Ev(FreeOK, SegBase, 1000),
				Ev(Alloc, SegBase, 600),
				Ev(FreeOK, SegBase+1024, 600),
			),
			want: map[string]int64{
				"allocated_bytes.all.peak": 2048, "allocated_bytes.all.allocated": 3072,
				"allocated_bytes.all.freed": 2048, "allocation.all.current": 1, "allocation.all.freed": 2,
				"active_bytes.all.peak": 2048, "requested_bytes.all.peak": 1600,
			},
			allocs: []Allocation{
				{Addr: SegBase, Size: 1024, Requested: 1000, AllocIndex: 1, FreeRequested: 3, FreeCompleted: 3},
				{Addr: SegBase + 1024, Size: 1024, Requested: 600, AllocIndex: 2, FreeRequested: 5, FreeCompleted: 5},
				{Addr: SegBase, Size: 1024, Requested: 600, AllocIndex: 4, FreeRequested: -1, FreeCompleted: -1},
			},
		},
		{
			// The same recording started late: undoing a free_completed
			// gives back an allocated block (no free_requested to undo).
			name: "skip free_requested: started late",
			s: Snap([]snapshot.Segment{Seg(SegBase, 2*MiB, "small", Blk(SegBase, 1024, 600, AAlloc), Blk(SegBase+1024, 2*MiB-1024, 0, Inact))},
				Ev(FreeOK, SegBase, 1000),
				Ev(Alloc, SegBase, 600),
				Ev(FreeOK, SegBase+1024, 600),
			),
			seeded: true,
			want: map[string]int64{
				"allocated_bytes.all.peak": 2048, "allocated_bytes.all.freed": 2048, "allocation.all.current": 1,
			},
			allocs: []Allocation{
				{Addr: SegBase, Size: 1024, Requested: 1000, AllocIndex: -1, FreeRequested: 0, FreeCompleted: 0},
				{Addr: SegBase + 1024, Size: 1024, Requested: 600, AllocIndex: -1, FreeRequested: 2, FreeCompleted: 2},
				{Addr: SegBase, Size: 1024, Requested: 600, AllocIndex: 1, FreeRequested: -1, FreeCompleted: -1},
			},
		},
		{
			name:   "oom",
			s:      Snap(nil, snapshot.TraceEntry{Action: OOM, Addr: 1 << 30, Size: 400 << 30}),
			want:   map[string]int64{"num_ooms": 1, "num_alloc_retries": 1},
			allocs: []Allocation{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(tc.s, 0, Options{})
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
	s := Snap(nil,
		Ev(SegAl, SegBase, 2*MiB),
		Ev(Alloc, SegBase, 1000),
		Ev(Alloc, SegBase+1024, 3000),
		snapshot.TraceEntry{Action: OOM, Addr: 5 << 30, Size: 400 << 30, TimeUS: 30},
		Ev(FreeRq, SegBase, 1000), Ev(FreeOK, SegBase, 1000),
	)
	for i := range s.Traces[0] {
		s.Traces[0][i].TimeUS = int64(10 * i)
	}
	r, err := Run(s, 0, Options{})
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
		Addr: SegBase, Size: 2 * MiB, Blocks: []StateBlock{
			{Addr: SegBase, Size: 1024, Requested: 1000, State: AAlloc, Alloc: 0},
			{Addr: SegBase + 1024, Size: 3072, Requested: 3000, State: AAlloc, Alloc: 1},
			{Addr: SegBase + 4096, Size: 2*MiB - 4096, State: Inact, Alloc: -1},
		},
	}}
	if diff := cmp.Diff(wantSegs, st.Segments); diff != "" {
		t.Errorf("StateAt(3).Segments (-want +got):\n%s", diff)
	}
	wantFree := []FreeSpace{{FreeBytes: 2*MiB - 4096, Blocks: 1, Largest: 2*MiB - 4096, Reserved: 2 * MiB}}
	if diff := cmp.Diff(wantFree, st.Free); diff != "" {
		t.Errorf("StateAt(3).Free (-want +got):\n%s", diff)
	}
	wantOOM := &OOMInfo{Size: 400 << 30, Large: true, DeviceFree: 5 << 30}
	if diff := cmp.Diff(wantOOM, st.OOM); diff != "" {
		t.Errorf("StateAt(3).OOM (-want +got):\n%s", diff)
	}
	if got := st.Stats.AllocatedBytes[stats.PoolAll].Current; got != 4096 {
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
	s := Snap(nil)
	for _, dev := range []int{-1, 0, 3} {
		if _, err := Run(s, dev, Options{}); err == nil {
			t.Errorf("Run(empty, %d, Options{}): no error", dev)
		}
	}
}

// TestReplayMatchesMemoryStats compares the replayed memory_stats() with
// torch's at dump time, figure by figure. On traces recorded from the first
// allocation every figure must be equal, except num_alloc_retries (a lower
// bound) and num_sync_all_streams (not derivable). Elsewhere the current
// figures must be equal and the lower bounds must not exceed torch's.
func TestReplayMatchesMemoryStats(t *testing.T) {
	var matched, total int
	for _, ss := range SharedSnapshots(t) {
		if ss.StatsFile == "" {
			continue
		}
		data, err := os.ReadFile(ss.StatsFile)
		if err != nil {
			t.Fatal(err)
		}
		torch, err := stats.ParseStatsJSON(data, 0)
		if err != nil {
			t.Fatalf("%s: %v", ss.StatsFile, err)
		}
		s, err := snapshot.Load(ss.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range torch {
			r, err := Run(s, want.Device, Options{})
			if err != nil {
				t.Fatalf("%s: %v", ss.Name, err)
			}
			exact := !r.Seeded && len(DeviceTrace(s, want.Device)) > 0
			if ss.FromStart && !exact {
				t.Errorf("%s device %d: recorded from start but replay is seeded", ss.Name, want.Device)
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
				case f.Exactness == stats.LowerBound && f.Value <= w:
				case f.Exactness == stats.Unknown:
				default:
					t.Errorf("%s device %d: %s = %d (%v), torch has %d", ss.Name, want.Device, f.Key, f.Value, f.Exactness, w)
				}
			}
			t.Logf("%s device %d: %d/%d figures equal (exact history: %t)", ss.Name, want.Device, m, len(figs), exact)
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
	for _, ss := range SharedSnapshots(t) {
		s, err := snapshot.Load(ss.Path)
		if err != nil {
			t.Fatalf("%s: %v", ss.Name, err)
		}
		for _, dev := range s.Devices() {
			r, err := Run(s, dev, Options{})
			if err != nil {
				t.Fatalf("%s device %d: %v", ss.Name, dev, err)
			}
			replays++
			if len(r.Allocated) > 0 {
				withTrace++
			}
			if r.Check.Equal {
				equal++
			} else {
				t.Errorf("%s device %d: end state differs from the file:\n%s", ss.Name, dev, strings.Join(r.Check.Differences, "\n"))
			}
			for _, f := range r.Stats.Figures() {
				if f.Value < 0 && f.Key != "max_split_size" {
					t.Errorf("%s device %d: %s = %d", ss.Name, dev, f.Key, f.Value)
				}
			}
			for name, series := range map[string][]int64{"allocated": r.Allocated, "active": r.Active, "reserved": r.Reserved, "requested": r.Requested} {
				for i, v := range series {
					if v < 0 {
						t.Errorf("%s device %d: %s[%d] = %d", ss.Name, dev, name, i, v)
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
					t.Fatalf("%s device %d: StateAt(%d): %v", ss.Name, dev, i, err)
				}
				if msg := checkTiling(st); msg != "" {
					t.Errorf("%s device %d entry %d: %s", ss.Name, dev, i, msg)
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
			case !m.blockAt.Is(blk.addr, b):
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
	if nblocks != m.blockAt.Len() {
		return fmt.Sprintf("%d blocks in segments, %d indexed", nblocks, m.blockAt.Len())
	}
	for _, f := range m.st.PooledFamilies() {
		for p := range stats.NumPools {
			if f.Stat[p].Current < 0 {
				return fmt.Sprintf("%s.%v.current = %d", f.Key, p, f.Stat[p].Current)
			}
		}
	}
	return ""
}

// TestReplayInvariants replays every real file entry by entry and checks
// the state's invariants after each entry (every 97th entry beyond 5,000
// entries).
func TestReplayInvariants(t *testing.T) {
	for _, ss := range SharedSnapshots(t) {
		s, err := snapshot.Load(ss.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range s.Devices() {
			r, err := Run(s, dev, Options{})
			if err != nil {
				t.Fatal(err)
			}
			x := r.newRunner(false)
			if msg := x.m.checkInvariants(); msg != "" {
				t.Errorf("%s device %d before the first entry: %s", ss.Name, dev, msg)
				continue
			}
			for i := range x.trace {
				x.step(i)
				if len(x.trace) > 5000 && i%97 != 0 && i != len(x.trace)-1 {
					continue
				}
				if msg := x.m.checkInvariants(); msg != "" {
					t.Errorf("%s device %d after entry %d: %s", ss.Name, dev, i, msg)
					break
				}
			}
		}
	}
}
