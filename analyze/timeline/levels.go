package timeline

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/snapshot"
)

// A long trace is drawn at full width from a few hundred points, which
// says nothing of one step of it. For the page to redraw the part a
// zoom shows from the trace's own entries, [StackTimeline] adds a
// multi-resolution index (Levels): the same series at several bucket
// sizes, each level DownsampleMinMax's first minimum and first maximum of
// the allocated bytes in each bucket, with every series' exact value at
// those entries; the page draws the finest level that fits the window.
// And for single allocations at any zoom (Singles): the trace is cut into
// regions and the largest allocations live in each region are kept, so
// that the page can draw the largest of the window on their own, the rest
// summed in their groups.

// LevelOptions tunes the multi-resolution index of [StackTimeline].
type LevelOptions struct {
	// Points is the most points of all levels together; 0 means no
	// levels. Levels are added from the coarsest while they fit.
	Points int
	// Coarsest is the number of buckets of the coarsest level (default
	// 1024); Factor the ratio of the bucket counts of two successive
	// levels (default 4).
	Coarsest, Factor int
	// Regions is the most regions of entries the trace is cut into for
	// Singles (a region has at least RegionEntries entries, default 256),
	// PerRegion the number of allocations kept per region (the largest
	// live in it); 0 means no Singles.
	Regions, PerRegion, RegionEntries int
}

// Level is one resolution of a Timeline's multi-resolution index: the
// points DownsampleMinMax keeps of the allocated bytes with Buckets
// buckets of entry indexes, with every series' value at them.
type Level struct {
	// Buckets is the number of buckets over the trace's entries; a level
	// with every entry has Buckets >= Entries/2.
	Buckets int
	// Index are the kept entries, ascending; X their x values (as
	// Timeline.X).
	Index []int
	X     []int64
	// Allocated, Active and Reserved are bytes at each kept entry;
	// Groups[g] are the bytes of the Timeline's group g there.
	Allocated, Active, Reserved []int64
	Groups                      [][]int64
}

// Single is one allocation the page can draw on its own: Range indexes
// the StackTimelineInput's Ranges, Group the Timeline's group it is
// summed in.
type Single struct {
	Range, Group int
}

// groupIndex returns the group of every stack of in's ranges: its own
// group when it has one, else the Other group.
func groupIndex(tl *Timeline, in StackTimelineInput) map[snapshot.StackID]int {
	other := -1
	groupOf := map[snapshot.StackID]int{}
	for g, grp := range tl.Groups {
		if grp.Other {
			other = g
			continue
		}
		groupOf[grp.Stack] = g
	}
	for _, r := range in.Ranges {
		if _, ok := groupOf[r.Stack]; !ok && other >= 0 {
			groupOf[r.Stack] = other
		}
	}
	return groupOf
}

// seriesAt fills a level's series at its Index.
func seriesAt(lv *Level, tl *Timeline, in StackTimelineInput, timeUS []int64, groupOf map[snapshot.StackID]int) {
	np := len(lv.Index)
	lv.X, lv.Allocated, lv.Active, lv.Reserved = make([]int64, np), make([]int64, np), make([]int64, np), make([]int64, np)
	for p, i := range lv.Index {
		lv.X[p], lv.Allocated[p], lv.Active[p], lv.Reserved[p] = xOf(timeUS, i), in.Allocated[i], in.Active[i], in.Reserved[i]
	}
	lv.Groups = groupBytesAt(lv.Index, in, groupOf, len(tl.Groups))
}

// levels returns the multi-resolution index of tl (made from in): from
// opt.Coarsest buckets, each level opt.Factor times finer, while all
// levels together keep at most opt.Points points, the finest with as many
// buckets as the points left allow; the finest keeps every entry when it
// fits. None when tl already keeps every entry.
func levels(tl *Timeline, in StackTimelineInput, timeUS []int64, opt LevelOptions, groupOf map[snapshot.StackID]int) []Level {
	n := len(in.Allocated)
	if opt.Points <= 0 || len(tl.Index) >= n {
		return nil
	}
	if opt.Coarsest <= 0 {
		opt.Coarsest = 1024
	}
	if opt.Factor < 2 {
		opt.Factor = 4
	}
	ix := newMinMaxIndex([][]int64{in.Allocated}, n)
	keep := []int{}
	if tl.PeakPoint >= 0 {
		keep = append(keep, tl.Index[tl.PeakPoint])
	}
	var out []Level
	total := 0
	for b := opt.Coarsest; ; b *= opt.Factor {
		idx := ix.downsample(n, indexBuckets(n, b), b, keep)
		if total+len(idx) > opt.Points {
			// The finest level takes what is left, when that is still
			// finer than the last by half as much again (a bucket keeps
			// at most two points and the ends and keep).
			f := (opt.Points - total - 2 - len(keep)) / 2
			if len(out) == 0 || 2*f < 3*out[len(out)-1].Buckets {
				break
			}
			b, idx = f, ix.downsample(n, indexBuckets(n, f), f, keep)
			if total+len(idx) > opt.Points {
				break
			}
			opt.Factor = n + 1 // the last level
		}
		total += len(idx)
		lv := Level{Buckets: b, Index: idx}
		seriesAt(&lv, tl, in, timeUS, groupOf)
		out = append(out, lv)
		if len(idx) >= n || b > n || opt.Factor > n {
			break
		}
	}
	return out
}

// singles returns the allocations of in kept for the page to draw on
// their own: the trace's entries cut into opt.Regions regions, the
// opt.PerRegion largest allocations live in each (by bytes, then the
// earlier start, then the earlier range), ordered by start. Each range
// is looked at once in order of size: a region that has its PerRegion is
// skipped from then on (a union-find of the next region not full), so the
// cost does not grow with how many regions a long-lived range spans.
func singles(in StackTimelineInput, opt LevelOptions, groupOf map[snapshot.StackID]int) []Single {
	n := len(in.Allocated)
	if opt.Regions <= 0 || opt.PerRegion <= 0 || n == 0 {
		return nil
	}
	if opt.RegionEntries <= 0 {
		opt.RegionEntries = 256
	}
	regions := max(1, min(opt.Regions, n/opt.RegionEntries))
	regionOf := func(i int) int { return int(int64(i) * int64(regions) / int64(n)) }
	// The sort keys sit beside each range's index, so that the sort (a
	// million ranges on a 2M-entry trace) reads one array in order.
	type candidate struct {
		bytes    int64
		start, k int
	}
	// Most ranges cannot be kept: a range is not when each region it is
	// live in has PerRegion ranges starting in it with more bytes (they
	// come first in the order below and fill the region before it), and it
	// changes no count then. So only the others are sorted (on the
	// 2M-entry file 42,747 of its 667,232 ranges): floor[g] is the
	// PerRegion-th most bytes of the ranges starting in region g (0 while
	// fewer start there).
	top := make([]int64, regions*opt.PerRegion) // per region, most bytes first
	for _, r := range in.Ranges {
		c, ok := clipRange(r, n)
		if !ok || r.Bytes <= 0 {
			continue
		}
		t := top[regionOf(max(c.Start, 0))*opt.PerRegion:][:opt.PerRegion]
		if r.Bytes <= t[len(t)-1] {
			continue
		}
		j := len(t) - 1
		for j > 0 && t[j-1] < r.Bytes {
			t[j] = t[j-1]
			j--
		}
		t[j] = r.Bytes
	}
	floor := func(g int) int64 { return top[g*opt.PerRegion+opt.PerRegion-1] }
	const spanChecked = 64 // regions; a range live in more is kept as a candidate
	order := make([]candidate, 0, len(in.Ranges)/16)
	for k, r := range in.Ranges {
		c, ok := clipRange(r, n)
		if !ok || r.Bytes <= 0 {
			continue
		}
		if lo, hi := regionOf(max(c.Start, 0)), regionOf(c.End-1); hi-lo < spanChecked {
			out := true
			for g := lo; g <= hi && out; g++ {
				out = r.Bytes < floor(g)
			}
			if out {
				continue
			}
		}
		order = append(order, candidate{bytes: r.Bytes, start: r.Start, k: k})
	}
	slices.SortFunc(order, func(a, b candidate) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.k, b.k)
	})
	count := make([]int, regions)
	next := make([]int, regions+1) // next[r]: r when region r is not full
	for r := range next {
		next[r] = r
	}
	var find func(r int) int
	find = func(r int) int {
		for next[r] != r {
			next[r] = next[next[r]]
			r = next[r]
		}
		return r
	}
	var out []Single
	for _, c := range order {
		k := c.k
		r, _ := clipRange(in.Ranges[k], n)
		lo, hi := regionOf(max(r.Start, 0)), regionOf(r.End-1) // regions it is live in
		kept := false
		for g := find(lo); g <= hi; g = find(g + 1) {
			kept = true
			if count[g]++; count[g] == opt.PerRegion {
				next[g] = g + 1
			}
		}
		if kept {
			out = append(out, Single{Range: k, Group: groupOf[in.Ranges[k].Stack]})
		}
	}
	slices.SortFunc(out, func(a, b Single) int {
		if c := cmp.Compare(in.Ranges[a.Range].Start, in.Ranges[b.Range].Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Range, b.Range)
	})
	return out
}

// StepEnvelope redraws the points of tl, made by [StackTimeline] from in,
// as an envelope of the steps: for each step (or run of steps), the
// entries of its first minimum and its first maximum of allocated bytes
// and its last entry, so that a long trace at full width draws each
// step's low, high and end rather than buckets that straddle steps and
// alias into drops of random width. steps are the steps' first and last
// entries, ascending and disjoint; what lies before the first and after
// the last is one more range each. Consecutive steps are joined, as few
// as needed, so that the points stay within maxPoints (at most 3 per
// range, with the first entry, the peak and in.Keep). It sets
// tl.StepsPerPoint to the number of steps joined (1: one per step); it
// does nothing without at least two steps or when tl keeps every entry.
func StepEnvelope(tl *Timeline, in StackTimelineInput, steps [][2]int, maxPoints int) {
	n := len(in.Allocated)
	if len(steps) < 2 || len(tl.Index) >= n || n == 0 {
		return
	}
	timeUS := in.TimeUS
	if !tl.XIsTime {
		timeUS = nil
	}
	per := 1
	for per < len(steps) && 3*((len(steps)+per-1)/per+2) > maxPoints {
		per++
	}
	var ranges [][2]int
	if s := steps[0][0]; s > 0 {
		ranges = append(ranges, [2]int{0, s - 1})
	}
	for k := 0; k < len(steps); k += per {
		last := min(k+per, len(steps)) - 1
		ranges = append(ranges, [2]int{steps[k][0], steps[last][1]})
	}
	if e := steps[len(steps)-1][1]; e < n-1 {
		ranges = append(ranges, [2]int{e + 1, n - 1})
	}
	ix := newMinMaxIndex([][]int64{in.Allocated}, n)
	idx := append([]int{0, n - 1}, in.Keep...)
	if tl.PeakPoint >= 0 {
		idx = append(idx, tl.Index[tl.PeakPoint])
	}
	for _, r := range ranges {
		lo, hi := max(r[0], 0), min(r[1], n-1)
		if lo > hi {
			continue
		}
		iMin, iMax := ix.minMax(0, lo, hi+1)
		idx = append(idx, iMin, iMax, hi)
	}
	idx = slices.DeleteFunc(idx, func(i int) bool { return i < 0 || i >= n })
	slices.Sort(idx)
	idx = slices.Compact(idx)
	peak := -1
	if tl.PeakPoint >= 0 {
		peak = tl.Index[tl.PeakPoint]
	}
	lv := Level{Index: idx}
	groupOf := groupIndex(tl, in)
	seriesAt(&lv, tl, in, timeUS, groupOf)
	tl.Index, tl.X, tl.Allocated, tl.Active, tl.Reserved = lv.Index, lv.X, lv.Allocated, lv.Active, lv.Reserved
	for g := range tl.Groups {
		tl.Groups[g].Bytes = lv.Groups[g]
		tl.Groups[g].MaxBytes = 0
		for _, v := range lv.Groups[g] {
			tl.Groups[g].MaxBytes = max(tl.Groups[g].MaxBytes, v)
		}
	}
	tl.PeakPoint = -1
	if p, ok := slices.BinarySearch(tl.Index, peak); ok {
		tl.PeakPoint = p
	}
	tl.StepsPerPoint = per
}
