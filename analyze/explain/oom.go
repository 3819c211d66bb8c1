package explain

import (
	"cmp"
	"math"
	"slices"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// oomFindings explains the oom entry at index i of the device's trace,
// whose state (after the entry) is st: the cause, then the blockers.
//
// The cause, in order (the request R, the cached free bytes F of its pool
// and stream and their largest block L, all from st.OOM as state --at oom
// shows them; D the free device memory cudaMemGetInfo reported):
//
//   - F >= R > L: oom-fragmentation: the cache held the bytes, in pieces
//     (c10/cuda/CUDACachingAllocator.cpp, get_free_block finds no block of
//     R bytes in the pool; malloc then grows the pool and fails);
//   - D >= R: oom-cap: the device had the memory, the process's cap
//     (set_per_process_memory_fraction, allowed_memory_maximum in
//     alloc_block) refused the cudaMalloc;
//   - otherwise oom-device: the device itself was full.
func oomFindings(in Input, i int, st *replay.State) []Finding {
	r := in.Replay
	o := st.OOM
	tr := trace(in.Snap, r.Device)
	cur := st.Stats.Known.Current
	f := Finding{Entry: i, PoolSet: true, Large: o.Large, Stream: o.Stream, Severity: SeverityError}
	switch {
	case o.FreeInPool >= o.Size && o.LargestFree < o.Size:
		f.Kind = KindOOMFragmentation
	case o.DeviceFree >= o.Size:
		f.Kind = KindOOMCap
	default:
		f.Kind = KindOOMDevice
	}
	f.add("request_bytes", o.Size, Bytes, stats.Exact)
	f.add("device_free_bytes", o.DeviceFree, Bytes, stats.Exact)
	f.add("free_in_pool_bytes", o.FreeInPool, Bytes, cur)
	f.add("largest_free_bytes", o.LargestFree, Bytes, cur)
	f.add("reserved_bytes", st.Stats.ReservedBytes[stats.PoolAll].Current, Bytes, cur)
	f.add("allocated_bytes", st.Stats.AllocatedBytes[stats.PoolAll].Current, Bytes, cur)
	if w := in.Whatif; w != nil {
		// The cap whatif simulated, one or an interval (whatif.Verdict),
		// and where it came from (whatif.Result.LimitSource).
		v := w.Verdict()
		switch {
		case v.Lo > 0 && v.Lo == v.Hi:
			f.add("cap_bytes", v.Lo, Bytes, stats.Exact)
		case v.Hi > 0:
			f.add("cap_min_bytes", v.Lo, Bytes, stats.Exact)
			f.add("cap_max_bytes", v.Hi, Bytes, stats.Exact)
		}
		f.CapSource = v.Source
		if v.Uncapped > 0 {
			f.add("uncapped_peak_reserved_bytes", v.Uncapped, Bytes, stats.Exact)
		}
		if m := w.Message; m != nil {
			// torch's message: the device's capacity, and the memory the
			// process had in use beyond what PyTorch reserved (the CUDA
			// context, other libraries), and other processes'.
			if m.Capacity != nil {
				f.add("device_capacity_bytes", m.Capacity.Min, Bytes, stats.LowerBound)
			}
			if m.InUse != nil {
				f.add("non_pytorch_bytes", max(0, m.InUse.Min-st.Stats.ReservedBytes[stats.PoolAll].Current), Bytes, stats.LowerBound)
			}
			var others int64
			for _, o := range m.Others {
				others += o.Min
			}
			if len(m.Others) > 0 {
				f.add("other_processes_bytes", others, Bytes, stats.LowerBound)
			}
		}
		setBest(&f, in)
	}
	if i < len(tr) && tr[i].Stack > 0 {
		f.Stacks = []snapshot.StackID{tr[i].Stack}
	}
	out := []Finding{f}
	if b, ok := oomBlockers(in, i, st); ok {
		out = append(out, b)
	}
	return out
}

// setBest sets f's setting to whatif's best row.
func setBest(f *Finding, in Input) {
	w := in.Whatif
	if w == nil || w.Best < 0 || w.Best >= len(w.Rows) {
		return
	}
	setRow(f, w, w.Best)
	if f.Setting == "" {
		f.Setting = `""`
	}
}

// block is one block of a segment, for the blocker searches.
type block struct {
	size  int64
	live  bool
	alloc int // index into Result.Allocs, -1 unknown
	stack snapshot.StackID
}

// oomBlockers finds the live allocations that kept the OOM's request from
// a free block.
//
// Contiguity, when a segment of the request's pool and stream is at least
// R bytes: over every such segment, the shortest run of adjacent blocks of
// R bytes or more with the fewest live blocks in it (ties: the fewest live
// bytes): had those allocations been absent, their run would have been
// one free block of R bytes (free neighbours merge: free_block's
// try_merge_blocks), which get_free_block would have found.
//
// Release, otherwise (no cached segment could hold R): the segments of the
// default pools that are partly free, whose live blocks keep
// release_cached_blocks from handing them back to the device before the
// retry (it releases only whole free segments: release_blocks skips split
// blocks); each strands its free bytes. They are ranked by stranded bytes,
// and named only when the pinned segments add up to the request at least
// (else releasing them all would not have made room).
func oomBlockers(in Input, i int, st *replay.State) (Finding, bool) {
	o := st.OOM
	r := in.Replay
	f := Finding{Kind: KindBlockers, Severity: SeverityError, Entry: i, PoolSet: true, Large: o.Large, Stream: o.Stream}
	f.add("request_bytes", o.Size, Bytes, stats.Exact)
	cur := st.Stats.Known.Current
	var best window
	found := false
	for k := range st.Segments {
		seg := &st.Segments[k]
		if seg.Large != o.Large || seg.Stream != o.Stream || !seg.Pool.IsDefault() || seg.Expandable || seg.Size < o.Size {
			continue
		}
		w, ok := minWindow(stateBlocks(seg), o.Size)
		if ok && (!found || w.better(best)) {
			w.seg = k
			best, found = w, true
		}
	}
	tr := trace(in.Snap, r.Device)
	if found {
		seg := &st.Segments[best.seg]
		f.Mode = "contiguity"
		var bl []block
		for _, b := range stateBlocks(seg)[best.lo:best.hi] {
			if b.live {
				bl = append(bl, b)
			}
		}
		f.Blockers = groupBlockers(r, tr, []int{i}, [][]block{bl}, []int64{best.free})
		f.add("blocking_allocations", int64(best.live), Count, cur)
		f.add("blocking_bytes", best.liveBytes, Bytes, cur)
		f.add("stranded_bytes", best.free, Bytes, cur)
		f.add("segment_bytes", seg.Size, Bytes, cur)
		// Growing in place would avoid the split too; whatif says
		// whether it fits under the cap.
		setExpandable(&f, in.Whatif)
		return f, len(f.Blockers) > 0
	}
	f.Mode = "release"
	n, segBytes, total := pinned(r, tr, i, st, false, &f)
	if n == 0 || segBytes < o.Size {
		// Releasing every pinned segment would not have made room.
		return f, false
	}
	f.add("pinned_segments", int64(n), Count, cur)
	f.add("pinned_segment_bytes", segBytes, Bytes, cur)
	f.add("stranded_bytes", total, Bytes, cur)
	return f, true
}

// pinned finds the segments of the default pools in st that are partly
// free (mostly free, with mostlyFree: free bytes at least the live ones),
// whose live blocks keep release_cached_blocks from giving them back
// (release_blocks frees only unsplit blocks); it sets f's blockers (judged
// at entry at) and returns how many segments, their bytes and their free
// bytes.
func pinned(r *replay.Result, tr []snapshot.TraceEntry, at int, st *replay.State, mostlyFree bool, f *Finding) (n int, segBytes, total int64) {
	var groups [][]block
	var stranded []int64
	var ats []int
	for k := range st.Segments {
		seg := &st.Segments[k]
		if !seg.Pool.IsDefault() || seg.Expandable {
			continue
		}
		var free, liveBytes int64
		var live []block
		for _, b := range stateBlocks(seg) {
			if b.live {
				live = append(live, b)
				liveBytes += b.size
			} else {
				free += b.size
			}
		}
		if free == 0 || len(live) == 0 || mostlyFree && free < liveBytes {
			continue
		}
		groups = append(groups, live)
		stranded = append(stranded, free)
		ats = append(ats, at)
		total += free
		segBytes += seg.Size
	}
	if len(groups) > 0 {
		f.Blockers = groupBlockers(r, tr, ats, groups, stranded)
	}
	return len(groups), segBytes, total
}

// stateBlocks returns seg's blocks for the searches: live are the active
// ones (allocated or pending free: neither can be reused).
func stateBlocks(seg *replay.StateSegment) []block {
	out := make([]block, len(seg.Blocks))
	for k, b := range seg.Blocks {
		out[k] = block{size: b.Size, live: b.State.Active(), alloc: b.Alloc, stack: b.Stack}
	}
	return out
}

// window is a run of adjacent blocks [lo, hi) of one segment.
type window struct {
	seg, lo, hi int
	live        int
	liveBytes   int64
	free        int64
}

func (w window) better(o window) bool {
	if w.live != o.live {
		return w.live < o.live
	}
	return w.liveBytes < o.liveBytes
}

// minWindow returns the run of adjacent blocks of at least need bytes with
// the fewest live blocks (then the fewest live bytes) among the shortest
// runs ending at each block whose free bytes exceed their live bytes (the
// live blocks cut free space, rather than fill the segment); false when
// there is none. Two pointers: O(len(bs)).
func minWindow(bs []block, need int64) (window, bool) {
	var best window
	found := false
	var sum, liveBytes int64
	live := 0
	lo := 0
	for hi := 0; hi < len(bs); hi++ {
		sum += bs[hi].size
		if bs[hi].live {
			live++
			liveBytes += bs[hi].size
		}
		for sum-bs[lo].size >= need {
			if bs[lo].live {
				live--
				liveBytes -= bs[lo].size
			}
			sum -= bs[lo].size
			lo++
		}
		if sum >= need && sum-liveBytes > liveBytes {
			w := window{lo: lo, hi: hi + 1, live: live, liveBytes: liveBytes, free: sum - liveBytes}
			if !found || w.better(best) {
				best, found = w, true
			}
		}
	}
	return best, found
}

// groupBlockers groups blocking blocks by allocation stack: groups[k] are
// the blocks of one segment (or window) that strand stranded[k] bytes,
// shared out among its blocks by size, judged at entry ats[k] (how long a
// stack held its blocks is taken at the entry of its oldest block's
// group). Ranked by stranded bytes, then bytes, then stack.
func groupBlockers(r *replay.Result, tr []snapshot.TraceEntry, ats []int, groups [][]block, stranded []int64) []Blocker {
	by := map[snapshot.StackID]*Blocker{}
	segs := map[snapshot.StackID]int{}
	at := map[snapshot.StackID]int{}
	for k, bs := range groups {
		var live int64
		for _, b := range bs {
			live += b.size
		}
		seen := map[snapshot.StackID]bool{}
		for _, b := range bs {
			g := by[b.stack]
			if g == nil {
				g = &Blocker{Stack: b.stack, FirstAlloc: math.MaxInt}
				by[b.stack] = g
				at[b.stack] = ats[k]
			}
			g.Count++
			g.Bytes += b.size
			if live > 0 {
				g.Stranded += stranded[k] * b.size / live
			}
			if !seen[b.stack] {
				seen[b.stack] = true
				segs[b.stack]++
			}
			ai := -1
			if b.alloc >= 0 && b.alloc < len(r.Allocs) {
				ai = r.Allocs[b.alloc].AllocIndex
			}
			if ai < g.FirstAlloc {
				g.FirstAlloc, at[b.stack] = ai, ats[k]
			}
			if g.MinSize == 0 || b.size < g.MinSize {
				g.MinSize = b.size
			}
			g.MaxSize = max(g.MaxSize, b.size)
		}
	}
	out := make([]Blocker, 0, len(by))
	for id, g := range by {
		g.Segments = segs[id]
		g.HeldUS = -1
		if a := at[id]; g.FirstAlloc >= 0 {
			g.HeldEntries = a - g.FirstAlloc
			g.HeldUS = span(tr, g.FirstAlloc, a)
		} else {
			g.HeldEntries = a + 1
		}
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b Blocker) int {
		if c := cmp.Compare(b.Stranded, a.Stranded); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Bytes, a.Bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.Stack, b.Stack)
	})
	return out
}
