package hostreplay

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/frames"
	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

const fixtures = "../../testdata/snapshots/"

// TestHostPinnedByHand replays host_pinned.pickle (testdata/gen/hostgen.py)
// and compares every figure with the ones derived by hand from the host
// allocator's rules in host_pinned.meta.json.
func TestHostPinnedByHand(t *testing.T) {
	s, err := snapshot.Load(fixtures + "host_pinned.pickle")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(fixtures + "host_pinned.meta.json")
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Host struct {
			TraceEntries      int    `json:"trace_entries"`
			Seg               int64  `json:"segments"`
			PeakSeg           int64  `json:"peak_segments"`
			Reserved          int64  `json:"reserved_bytes"`
			PeakReserved      int64  `json:"peak_reserved_bytes"`
			PeakReservedEntry int    `json:"peak_reserved_entry"`
			ReservedAllocated int64  `json:"allocated_bytes_allocated"`
			ReservedFreed     int64  `json:"allocated_bytes_freed"`
			Active            int64  `json:"active_bytes"`
			PeakActive        int64  `json:"peak_active_bytes"`
			PeakActiveEntry   int    `json:"peak_active_entry"`
			ActiveAllocated   int64  `json:"active_bytes_allocated"`
			ActiveFreed       int64  `json:"active_bytes_freed"`
			Requests          int64  `json:"active_requests"`
			PeakRequests      int64  `json:"peak_active_requests"`
			RequestsAllocated int64  `json:"active_requests_allocated"`
			RequestsFreed     int64  `json:"active_requests_freed"`
			NumHostAlloc      int64  `json:"num_host_alloc"`
			NumHostFree       int64  `json:"num_host_free"`
			Cached            int64  `json:"cached_bytes"`
			PrivatePool       int    `json:"private_pool_blocks"`
			Trust             string `json:"trust"`
			LiveByStack       []struct {
				Frame  string `json:"frame"`
				Bytes  int64  `json:"bytes"`
				Blocks int    `json:"blocks"`
			} `json:"live_by_stack"`
		} `json:"host"`
	}
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	m := meta.Host
	r := Run(s)
	st := r.Stats
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"trace entries", int64(r.Entries), int64(m.TraceEntries)},
		{"allocations.current", st.Allocations.Current, m.Seg},
		{"allocations.peak", st.Allocations.Peak, m.PeakSeg},
		{"allocated_bytes.current", st.AllocatedBytes.Current, m.Reserved},
		{"allocated_bytes.peak", st.AllocatedBytes.Peak, m.PeakReserved},
		{"allocated_bytes.allocated", st.AllocatedBytes.Allocated, m.ReservedAllocated},
		{"allocated_bytes.freed", st.AllocatedBytes.Freed, m.ReservedFreed},
		{"peak reserved entry", int64(r.PeakReservedEntry), int64(m.PeakReservedEntry)},
		{"active_bytes.current", st.ActiveBytes.Current, m.Active},
		{"active_bytes.peak", st.ActiveBytes.Peak, m.PeakActive},
		{"active_bytes.allocated", st.ActiveBytes.Allocated, m.ActiveAllocated},
		{"active_bytes.freed", st.ActiveBytes.Freed, m.ActiveFreed},
		{"peak active entry", int64(r.PeakEntry), int64(m.PeakActiveEntry)},
		{"active_requests.current", st.ActiveRequests.Current, m.Requests},
		{"active_requests.peak", st.ActiveRequests.Peak, m.PeakRequests},
		{"active_requests.allocated", st.ActiveRequests.Allocated, m.RequestsAllocated},
		{"active_requests.freed", st.ActiveRequests.Freed, m.RequestsFreed},
		{"num_host_alloc", st.NumHostAlloc, m.NumHostAlloc},
		{"num_host_free", st.NumHostFree, m.NumHostFree},
		{"cached bytes", st.AllocatedBytes.Current - st.ActiveBytes.Current, m.Cached},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, derived by hand %d", c.name, c.got, c.want)
		}
	}
	if r.Trust.String() != m.Trust || !r.Checked || !r.Equal || r.Seeded != 0 || len(r.Deviations) != 0 {
		t.Errorf("trust %v (%s), checked %v equal %v %v, seeded %d, deviations %v; want %s",
			r.Trust, r.Why, r.Checked, r.Equal, r.Differences, r.Seeded, r.Deviations, m.Trust)
	}
	private := 0
	for i := range s.HostSegments {
		if !s.HostSegments[i].Pool.IsDefault() {
			private++
		}
	}
	if private != m.PrivatePool {
		t.Errorf("%d host segments in private pools, derived by hand %d", private, m.PrivatePool)
	}
	live := r.LiveByStack()
	if len(live) != len(m.LiveByStack) {
		t.Fatalf("live stacks %+v, want %+v", live, m.LiveByStack)
	}
	for i, w := range m.LiveByStack {
		fr := s.Stack(live[i].Stack)
		if len(fr) == 0 || s.Frames[fr[0]].Name != w.Frame || live[i].Bytes != w.Bytes || live[i].Count != w.Blocks {
			t.Errorf("live stack %d: %+v (%v), want %+v", i, live[i], frameNames(s, live[i].Stack), w)
		}
	}
}

func frameNames(s *snapshot.Snapshot, id snapshot.StackID) []string {
	var out []string
	for _, f := range s.Stack(id) {
		out = append(out, frames.FrameText(s.Frames[f]))
	}
	return out
}

// host makes a snapshot with pinned host memory only: segs (nil: no
// host_segments key) and trace.
func host(segs []snapshot.Segment, trace ...snapshot.TraceEntry) *snapshot.Snapshot {
	s := &snapshot.Snapshot{HostTraces: trace, HostSegments: segs, HasHostTraces: true,
		Stacks: [][]snapshot.FrameID{nil}, TopLevelKeys: []string{"segments", "host_traces"}}
	if segs != nil {
		s.TopLevelKeys = append(s.TopLevelKeys, "host_segments")
	}
	return s
}

func hseg(addr snapshot.Addr, size int64, st snapshot.BlockState) snapshot.Segment {
	return Seg(addr, size, "small", Blk(addr, size, size, st))
}

// pseg is hseg in the private pool (1, 0) of a graph capture.
func pseg(addr snapshot.Addr, size int64, st snapshot.BlockState) snapshot.Segment {
	s := hseg(addr, size, st)
	s.Pool = snapshot.PoolID{1, 0}
	return s
}

// TestRules: each rule of the caching host allocator the replay checks,
// and the trust it leads to.
func TestRules(t *testing.T) {
	const A, B, C = SegBase, SegBase + 0x100000, SegBase + 0x200000
	none := []snapshot.Segment{}
	cases := []struct {
		name      string
		s         *snapshot.Snapshot
		trust     stats.Exactness
		why       string // a part of Why; "" when exact
		peak, end int64  // active bytes
	}{
		{"reuse after events", host([]snapshot.Segment{hseg(A, MiB, AAlloc)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(FreeRq, A, MiB), Ev(FreeOK, A, MiB), Ev(Alloc, A, MiB)),
			stats.Exact, "", MiB, MiB},
		{"reuse before events completed", host([]snapshot.Segment{hseg(A, MiB, AAlloc)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(FreeRq, A, MiB), Ev(Alloc, A, MiB)),
			stats.Unknown, "before the events of its streams completed", MiB, MiB},
		{"alloc records the request, not the block", host([]snapshot.Segment{hseg(A, MiB, AAlloc)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, 1000000)),
			stats.Unknown, "allocate records the block's size", MiB, MiB},
		{"the block cached last is reused (LIFO)", host([]snapshot.Segment{hseg(A, MiB, Inact), hseg(B, MiB, AAlloc)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(SegAl, B, MiB), Ev(Alloc, B, MiB),
			Ev(FreeRq, A, MiB), Ev(FreeOK, A, MiB), Ev(FreeRq, B, MiB), Ev(FreeOK, B, MiB), Ev(Alloc, B, MiB)),
			stats.Exact, "", 2 * MiB, MiB},
		{"a block other than the one cached last", host([]snapshot.Segment{hseg(A, MiB, AAlloc), hseg(B, MiB, Inact)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(SegAl, B, MiB), Ev(Alloc, B, MiB),
			Ev(FreeRq, A, MiB), Ev(FreeOK, A, MiB), Ev(FreeRq, B, MiB), Ev(FreeOK, B, MiB), Ev(Alloc, A, MiB)),
			stats.Unknown, "other than the one cached last", 2 * MiB, MiB},
		{"a new block while one of its size is cached", host([]snapshot.Segment{hseg(A, MiB, Inact), hseg(B, MiB, AAlloc)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(FreeRq, A, MiB), Ev(FreeOK, A, MiB),
			Ev(SegAl, B, MiB), Ev(Alloc, B, MiB)),
			stats.Unknown, "reuses a cached block first", MiB, MiB},
		{"another size class pins a new block", host([]snapshot.Segment{hseg(A, MiB, Inact), hseg(B, 2*MiB, AAlloc)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(FreeRq, A, MiB), Ev(FreeOK, A, MiB),
			Ev(SegAl, B, 2*MiB), Ev(Alloc, B, 2*MiB)),
			stats.Exact, "", 2 * MiB, 2 * MiB},
		{"over pinned_max_round_threshold: pinned unrounded", host([]snapshot.Segment{hseg(A, 3*MiB, AAlloc)},
			Ev(SegAl, A, 3*MiB), Ev(Alloc, A, 3*MiB)),
			stats.Exact, "", 3 * MiB, 3 * MiB},
		{"over pinned_max_cached_size: unpinned at its free", host(none,
			Ev(SegAl, A, 3*MiB), Ev(Alloc, A, 3*MiB), Ev(FreeRq, A, 3*MiB), Ev(FreeOK, A, 3*MiB), Ev(SegFr, A, 3*MiB)),
			stats.Exact, "", 3 * MiB, 0},
		{"a private pool's block does not serve the default pool", host([]snapshot.Segment{hseg(A, MiB, AAlloc), pseg(B, MiB, Inact)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(FreeRq, A, MiB), Ev(FreeOK, A, MiB),
			Ev(SegAl, B, MiB), Ev(Alloc, B, MiB), Ev(FreeRq, B, MiB), Ev(FreeOK, B, MiB), Ev(Alloc, A, MiB)),
			stats.Exact, "", MiB, MiB},
		{"a private pool pins a new block while the default pool caches one", host([]snapshot.Segment{hseg(A, MiB, Inact), pseg(B, MiB, AAlloc)},
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(FreeRq, A, MiB), Ev(FreeOK, A, MiB),
			Ev(SegAl, B, MiB), Ev(Alloc, B, MiB)),
			stats.Exact, "", MiB, MiB},
		{"empty_cache unpins cached blocks only", host(none,
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(SegFr, A, MiB)),
			stats.Unknown, "empty_cache unpins cached blocks only", MiB, 0},
		{"empty_cache after the free", host(none,
			Ev(SegAl, A, MiB), Ev(Alloc, A, MiB), Ev(FreeRq, A, MiB), Ev(FreeOK, A, MiB), Ev(SegFr, A, MiB)),
			stats.Exact, "", MiB, 0},
		{"a block pinned before the trace", host([]snapshot.Segment{hseg(C, 4*MiB, Inact)},
			Ev(FreeRq, C, 4*MiB), Ev(FreeOK, C, 4*MiB)),
			stats.LowerBound, "misses the start", 4 * MiB, 0},
		{"no host_segments", host(nil, Ev(SegAl, A, MiB), Ev(Alloc, A, MiB)),
			stats.LowerBound, "no host_segments", MiB, MiB},
		{"end state differs", host([]snapshot.Segment{hseg(A, MiB, Inact)}, Ev(SegAl, A, MiB), Ev(Alloc, A, MiB)),
			stats.Unknown, "differs from the file's host_segments", MiB, MiB},
		{"no host trace", host([]snapshot.Segment{hseg(A, MiB, AAlloc)}),
			stats.Unknown, "no host_traces entries", MiB, MiB},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Run(c.s)
			if r.Trust != c.trust || (c.why == "") != (r.Why == "") || !strings.Contains(r.Why, c.why) {
				t.Errorf("trust %v (%q), want %v (%q)", r.Trust, r.Why, c.trust, c.why)
			}
			if r.Stats.ActiveBytes.Peak != c.peak || r.Stats.ActiveBytes.Current != c.end {
				t.Errorf("active bytes peak %d end %d, want %d and %d", r.Stats.ActiveBytes.Peak, r.Stats.ActiveBytes.Current, c.peak, c.end)
			}
		})
	}
}

// TestHostOnlyFixture: host_memory.pickle (testdata/gen/fixtures.py, host
// data only) replays exactly: 2 MiB + 4 KiB pinned at most, 1 MiB + 4 KiB
// handed out at the end.
func TestHostOnlyFixture(t *testing.T) {
	s, err := snapshot.Load(fixtures + "host_memory.pickle")
	if err != nil {
		t.Fatal(err)
	}
	r := Run(s)
	if r.Trust != stats.Exact || r.Stats.AllocatedBytes.Peak != 2*MiB+4096 || r.Stats.ActiveBytes.Peak != 2*MiB ||
		r.Stats.ActiveBytes.Current != MiB+4096 || r.Stats.AllocatedBytes.Current != 2*MiB+4096 {
		t.Errorf("trust %v (%s), stats %+v", r.Trust, r.Why, r.Stats)
	}
}
