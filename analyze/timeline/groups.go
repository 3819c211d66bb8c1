package timeline

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/snapshot"
)

// LiveRange is one allocation as the timeline sees it: live after entry
// Start up to, not including, entry End.
type LiveRange struct {
	// Start is the trace index of the entry that allocated it; -1 for a
	// block that was already live when the trace begins.
	Start int
	// End is the trace index of the entry that freed it (it is not live
	// after End); the number of entries when it is still live at the end.
	End int
	// Bytes is its size.
	Bytes int64
	// Stack is its allocation stack.
	Stack snapshot.StackID
}

// StackTimelineInput is what [StackTimeline] needs: per-entry series of one
// device's trace (the value after each entry) and every allocation's live
// range.
type StackTimelineInput struct {
	// TimeUS is each entry's time_us; nil (or shorter than the series)
	// makes the x axis the entry index.
	TimeUS []int64
	// Allocated, Active and Reserved are bytes after each entry; they have
	// the same length, the number of entries.
	Allocated, Active, Reserved []int64
	// Ranges are the allocations to stack by their allocation stack.
	Ranges []LiveRange
	// Peak is the entry index of the peak; its point is always kept and
	// stacks are ranked by their bytes there.
	Peak int
	// Keep are more entry indices whose points must be kept (OOMs).
	Keep []int
}

// StackTimelineOptions tunes [StackTimeline].
type StackTimelineOptions struct {
	// Groups is how many stacks get their own area; the rest are summed
	// into one "other" group. At least 1.
	Groups int
	// Buckets is the number of x buckets of the min/max downsampling
	// ([DownsampleMinMax]); each keeps up to six points. With times, the
	// points kept by buckets of entry indexes are added too, so that the
	// timeline can be drawn over either x.
	Buckets int
	// MaxPoints, when positive, caps the kept points (the peak and Keep
	// aside): the buckets are made fewer until the points fit.
	MaxPoints int
	// Levels adds the multi-resolution index (Timeline.Levels) and the
	// single allocations (Timeline.Singles) of a trace longer than the
	// kept points; the zero value adds neither.
	Levels LevelOptions
}

// TimelineGroup is one stacked area: the allocations of one stack, or all
// the remaining ones.
type TimelineGroup struct {
	// Stack is the allocation stack; NoStack for Other.
	Stack snapshot.StackID
	// Other is true for the group that sums every stack not shown alone.
	Other bool
	// Stacks is the number of distinct stacks in the group (1 unless
	// Other).
	Stacks int
	// Count is the number of allocations in the group.
	Count int
	// PeakBytes is the group's live bytes at the peak entry; MaxBytes its
	// largest value over the kept points.
	PeakBytes, MaxBytes int64
	// Area is the integral of live bytes over x (bytes times microseconds,
	// or bytes times entries), the secondary ranking key.
	Area float64
	// Bytes are the group's live bytes at each kept point.
	Bytes []int64
}

// Timeline is a downsampled memory timeline of one device with the live
// bytes split by allocation stack.
type Timeline struct {
	// Entries is the number of trace entries it was made from.
	Entries int
	// XIsTime is true when X is microseconds since the first entry, false
	// when X is the entry index.
	XIsTime bool
	// Index are the kept entry indices, ascending; X their x values.
	Index []int
	X     []int64
	// Allocated, Active and Reserved are bytes at each kept point.
	Allocated, Active, Reserved []int64
	// Groups are the stacked areas, largest at the peak first; the Other
	// group, when there is one, is last.
	Groups []TimelineGroup
	// PeakPoint is the position of the peak entry in Index (-1 without
	// entries).
	PeakPoint int
	// StepsPerPoint is the number of steps each envelope range of
	// [StepEnvelope] joins (1: each step its own); 0 when the points are
	// DownsampleMinMax's buckets.
	StepsPerPoint int
	// Levels are the multi-resolution index of a trace longer than the
	// kept points (StackTimelineOptions.Levels), coarsest first; nil
	// otherwise.
	Levels []Level
	// Singles are the allocations the page may draw on their own,
	// ordered by start; nil without Levels.Regions.
	Singles []Single
}

// XOf returns the x value of entry i: microseconds since the first entry
// or the index itself.
func xOf(timeUS []int64, i int) int64 {
	if timeUS == nil {
		return int64(i)
	}
	return timeUS[i] - timeUS[0]
}

// timelinePoints picks the entries to draw of series of n entries:
// [DownsampleMinMax] over entry indexes and, with times (timeUS, n of them,
// non-decreasing), over time too (the union, so that both axes keep their
// shape), with fewer buckets until at most maxPoints remain (0: no cap).
func timelinePoints(timeUS []int64, n, buckets, maxPoints int, keep []int, series ...[]int64) []int {
	ix := newMinMaxIndex(series, n) // one pass; every pick below reuses it
	pick := func(b int) []int {
		if timeUS == nil {
			return ix.downsample(n, indexBuckets(n, b), b, keep)
		}
		out := ix.downsample(n, xBuckets(timeUS, b), b, keep)
		out = append(out, ix.downsample(n, indexBuckets(n, b), b, keep)...)
		slices.Sort(out)
		return slices.Compact(out)
	}
	out := pick(buckets)
	for maxPoints > 0 && len(out) > maxPoints && buckets > 8 {
		buckets = max(8, int(float64(buckets)*float64(maxPoints)/float64(len(out))*0.9))
		out = pick(buckets)
	}
	return out
}

// StackTimeline downsamples the series of in with [DownsampleMinMax] over
// allocated, active and reserved bytes, and splits the live bytes at each
// kept point into the top opt.Groups allocation stacks, ranked by bytes
// live at the peak, then by area, then by StackID, plus one group for the
// rest. It is deterministic.
func StackTimeline(in StackTimelineInput, opt StackTimelineOptions) *Timeline {
	n := len(in.Allocated)
	timeUS := in.TimeUS
	if len(timeUS) < n {
		timeUS = nil
	}
	tl := &Timeline{
		Entries: n, XIsTime: timeUS != nil, PeakPoint: -1,
		Index: []int{}, X: []int64{}, Allocated: []int64{}, Active: []int64{}, Reserved: []int64{},
		Groups: []TimelineGroup{},
	}
	if n == 0 {
		return tl
	}
	if timeUS != nil {
		timeUS = timeUS[:n]
	}
	keep := append(slices.Clone(in.Keep), in.Peak)
	tl.Index = timelinePoints(timeUS, n, max(opt.Buckets, 1), opt.MaxPoints, keep, in.Allocated, in.Active, in.Reserved)
	tl.X = make([]int64, len(tl.Index))
	tl.Allocated = make([]int64, len(tl.Index))
	tl.Active = make([]int64, len(tl.Index))
	tl.Reserved = make([]int64, len(tl.Index))
	for p, i := range tl.Index {
		tl.X[p], tl.Allocated[p], tl.Active[p], tl.Reserved[p] = xOf(timeUS, i), in.Allocated[i], in.Active[i], in.Reserved[i]
	}
	if p, ok := slices.BinarySearch(tl.Index, in.Peak); ok {
		tl.PeakPoint = p
	}
	groupOf := rankStacks(tl, in, timeUS, opt)
	groupBytes(tl, in, groupOf)
	tl.Levels = levels(tl, in, timeUS, opt.Levels, groupOf)
	tl.Singles = singles(in, opt.Levels, groupOf)
	return tl
}

// clipRange returns r within a trace of n entries, ok false when nothing
// of it is.
func clipRange(r LiveRange, n int) (LiveRange, bool) {
	r.Start, r.End = max(r.Start, -1), min(r.End, n)
	return r, r.End > r.Start && r.End > 0 && r.Bytes != 0
}

// rankStacks sets tl.Groups: the top opt.Groups stacks of in's ranges by
// bytes live at the peak, then area, then StackID, and one group for the
// rest; it returns each stack's group.
func rankStacks(tl *Timeline, in StackTimelineInput, timeUS []int64, opt StackTimelineOptions) map[snapshot.StackID]int {
	n := len(in.Allocated)
	type stackStat struct {
		stack snapshot.StackID
		count int
		peak  int64
		area  float64
	}
	byStack := map[snapshot.StackID]*stackStat{}
	for _, r := range in.Ranges {
		r, ok := clipRange(r, n)
		if !ok {
			continue
		}
		st := byStack[r.Stack]
		if st == nil {
			st = &stackStat{stack: r.Stack}
			byStack[r.Stack] = st
		}
		st.count++
		if r.Start <= in.Peak && in.Peak < r.End {
			st.peak += r.Bytes
		}
		st.area += float64(r.Bytes) * float64(xOf(timeUS, min(r.End, n-1))-xOf(timeUS, max(r.Start, 0)))
	}
	stats := make([]*stackStat, 0, len(byStack))
	for _, st := range byStack {
		stats = append(stats, st)
	}
	slices.SortFunc(stats, func(a, b *stackStat) int {
		if c := cmp.Compare(b.peak, a.peak); c != 0 {
			return c
		}
		if c := cmp.Compare(b.area, a.area); c != 0 {
			return c
		}
		return cmp.Compare(a.stack, b.stack)
	})
	top := min(max(opt.Groups, 1), len(stats))
	groupOf := make(map[snapshot.StackID]int, len(stats))
	for g, st := range stats {
		if g < top {
			groupOf[st.stack] = g
			tl.Groups = append(tl.Groups, TimelineGroup{
				Stack: st.stack, Stacks: 1, Count: st.count, PeakBytes: st.peak, Area: st.area,
			})
			continue
		}
		if g == top {
			tl.Groups = append(tl.Groups, TimelineGroup{Other: true})
		}
		groupOf[st.stack] = top
		o := &tl.Groups[top]
		o.Stacks++
		o.Count += st.count
		o.PeakBytes += st.peak
		o.Area += st.area
	}
	return groupOf
}

// groupBytes sets each group's live bytes at the kept points.
func groupBytes(tl *Timeline, in StackTimelineInput, groupOf map[snapshot.StackID]int) {
	for g, bytes := range groupBytesAt(tl.Index, in, groupOf, len(tl.Groups)) {
		tl.Groups[g].Bytes = bytes
		tl.Groups[g].MaxBytes = 0
		for _, v := range bytes {
			tl.Groups[g].MaxBytes = max(tl.Groups[g].MaxBytes, v)
		}
	}
}

// groupBytesAt returns each of groups groups' live bytes at the entries
// points (ascending): the ranges of in whose stack groupOf maps to it.
func groupBytesAt(points []int, in StackTimelineInput, groupOf map[snapshot.StackID]int, groups int) [][]int64 {
	n := len(in.Allocated)
	// A range counts at the kept points p with Start <= points[p] < End:
	// add its bytes at the first kept point at or after Start and take
	// them off at the first at or after End, then sum up the points in
	// order. Binary searches over the few kept points, no sort of the
	// ranges.
	np := len(points)
	delta := make([]int64, groups*(np+1))
	at := newPointIndex(points)
	for _, r := range in.Ranges {
		r, ok := clipRange(r, n)
		if !ok {
			continue
		}
		ps, pe := at.first(r.Start), at.first(r.End)
		if ps < pe {
			d := delta[groupOf[r.Stack]*(np+1):]
			d[ps] += r.Bytes
			d[pe] -= r.Bytes
		}
	}
	out := make([][]int64, groups)
	for g := range groups {
		d := delta[g*(np+1):]
		bytes := make([]int64, np)
		var cur int64
		for p := range np {
			cur += d[p]
			bytes[p] = cur
		}
		out[g] = bytes
	}
	return out
}

// pointIndex finds the first kept point at or after an entry index (what
// slices.BinarySearch on the points returns) through a table by entry
// index >> shift, then a short scan: StackTimeline asks twice per
// allocation.
type pointIndex struct {
	points []int
	start  []int32 // start[k]: the first point >= k << shift
	shift  uint
}

func newPointIndex(points []int) pointIndex {
	x := pointIndex{points: points}
	if len(points) == 0 {
		return x
	}
	last := points[len(points)-1]
	for last>>x.shift > 4*len(points)+64 {
		x.shift++
	}
	x.start = make([]int32, last>>x.shift+2)
	p := 0
	for k := range x.start {
		for p < len(points) && points[p] < k<<x.shift {
			p++
		}
		x.start[k] = int32(p)
	}
	return x
}

// first returns the first p with points[p] >= i (len(points) if none).
func (x pointIndex) first(i int) int {
	if len(x.points) == 0 {
		return 0
	}
	k := i >> x.shift
	if i < 0 {
		k = 0
	}
	if k >= len(x.start) {
		return len(x.points)
	}
	p := int(x.start[k])
	for p < len(x.points) && x.points[p] < i {
		p++
	}
	return p
}
