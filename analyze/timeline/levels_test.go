package timeline

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// randomTrace returns a trace of n entries, each allocating a block
// (sizes multiples of 512, stacks 1 to 6) or freeing a live one, with the
// allocated bytes after each entry; a few blocks are live before it and
// some never freed.
func randomTrace(seed uint64, n int) StackTimelineInput {
	rng := rand.New(rand.NewPCG(seed, 1))
	in := StackTimelineInput{}
	var live []int
	for k := 0; k < 3; k++ {
		in.Ranges = append(in.Ranges, LiveRange{Start: -1, End: n, Bytes: 512 * int64(1+rng.IntN(1000)), Stack: snapshot.StackID(1 + rng.IntN(6))})
		live = append(live, len(in.Ranges)-1)
	}
	var cur int64
	for _, r := range in.Ranges {
		cur += r.Bytes
	}
	for i := range n {
		if len(live) > 0 && rng.IntN(2) == 0 {
			j := rng.IntN(len(live))
			r := &in.Ranges[live[j]]
			if r.Start >= 0 { // the ones before the trace stay
				r.End = i
				cur -= r.Bytes
				live = slices.Delete(live, j, j+1)
			}
		} else {
			in.Ranges = append(in.Ranges, LiveRange{Start: i, End: n, Bytes: 512 * int64(1+rng.IntN(1<<uint(rng.IntN(12)))), Stack: snapshot.StackID(1 + rng.IntN(6))})
			live = append(live, len(in.Ranges)-1)
			cur += in.Ranges[len(in.Ranges)-1].Bytes
		}
		in.Allocated = append(in.Allocated, cur)
		in.Active = append(in.Active, cur+512)
		in.Reserved = append(in.Reserved, 1<<40)
		in.TimeUS = append(in.TimeUS, int64(1000+3*i))
	}
	in.Peak = int(slices.Index(in.Allocated, slices.Max(in.Allocated)))
	return in
}

// checkPoints checks that the series of a level (or the timeline's) are
// the input's at its entries and that its groups add up to the allocated
// bytes there.
func checkPoints(t *testing.T, name string, in StackTimelineInput, tl *Timeline, lv Level) {
	t.Helper()
	if !slices.IsSorted(lv.Index) || len(slices.Compact(slices.Clone(lv.Index))) != len(lv.Index) {
		t.Errorf("%s: entries not ascending and distinct", name)
	}
	for p, i := range lv.Index {
		if lv.Allocated[p] != in.Allocated[i] || lv.Active[p] != in.Active[i] || lv.Reserved[p] != in.Reserved[i] || lv.X[p] != in.TimeUS[i]-in.TimeUS[0] {
			t.Fatalf("%s: point %d (entry %d): series differ from the input's", name, p, i)
		}
		var sum int64
		for g := range tl.Groups {
			sum += lv.Groups[g][p]
		}
		if sum != in.Allocated[i] {
			t.Fatalf("%s: point %d (entry %d): the groups add up to %d bytes, allocated is %d", name, p, i, sum, in.Allocated[i])
		}
	}
}

// TestLevels: each level keeps the allocated bytes' first minimum and
// maximum of each of its buckets with every series exact there, the
// levels grow finer, and all of them keep at most Points points.
func TestLevels(t *testing.T) {
	in := randomTrace(7, 20000)
	for _, points := range []int{0, 3000, 12000, 60000} {
		tl := StackTimeline(in, StackTimelineOptions{Groups: 3, Buckets: 50, MaxPoints: 200,
			Levels: LevelOptions{Points: points, Coarsest: 256, Factor: 4}})
		total := 0
		for k, lv := range tl.Levels {
			total += len(lv.Index)
			if k > 0 && lv.Buckets <= tl.Levels[k-1].Buckets {
				t.Errorf("Points %d: level %d has %d buckets, the one before %d", points, k, lv.Buckets, tl.Levels[k-1].Buckets)
			}
			checkPoints(t, "level", in, tl, lv)
			// Every bucket's first minimum and maximum are kept.
			n := len(in.Allocated)
			for lo := 0; lo < n; {
				b := indexBuckets(n, lv.Buckets)(lo)
				hi := lo
				for hi < n && indexBuckets(n, lv.Buckets)(hi) == b {
					hi++
				}
				seg := in.Allocated[lo:hi]
				for _, i := range []int{lo + slices.Index(seg, slices.Min(seg)), lo + slices.Index(seg, slices.Max(seg))} {
					if _, ok := slices.BinarySearch(lv.Index, i); !ok {
						t.Fatalf("Points %d, level %d: bucket [%d, %d) lacks entry %d, its first minimum or maximum", points, k, lo, hi, i)
					}
				}
				lo = hi
			}
		}
		if total > points {
			t.Errorf("Points %d: the levels keep %d points", points, total)
		}
		if want := points > 0; (len(tl.Levels) > 0) != want {
			t.Errorf("Points %d: %d levels", points, len(tl.Levels))
		}
		t.Logf("Points %d: %d levels, %d points", points, len(tl.Levels), total)
	}
	// A trace the timeline keeps whole has no levels, but singles.
	small := randomTrace(8, 100)
	if tl := StackTimeline(small, StackTimelineOptions{Groups: 3, Buckets: 400, Levels: LevelOptions{Points: 1000, Regions: 4, PerRegion: 2}}); tl.Levels != nil || len(tl.Singles) != 2 {
		t.Errorf("a trace drawn whole got %d levels and %d singles, want 0 and 2 (one region)", len(tl.Levels), len(tl.Singles))
	}
}

// TestSingles: the singles are, for each region, the PerRegion largest
// allocations live in it (by bytes, then start, then order), and nothing
// else; each in its stack's group.
func TestSingles(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		in := randomTrace(seed, 5000)
		opt := LevelOptions{Points: 1000, Regions: 37, PerRegion: 5, RegionEntries: 1}
		tl := StackTimeline(in, StackTimelineOptions{Groups: 2, Buckets: 50, Levels: opt})
		n := len(in.Allocated)
		want := map[int]bool{}
		for g := range opt.Regions {
			lo, hi := (g*n+opt.Regions-1)/opt.Regions, ((g+1)*n+opt.Regions-1)/opt.Regions // entries [lo, hi): i*Regions/n == g
			var live []int
			for k, r := range in.Ranges {
				if r.Start < hi && r.End > lo && r.End > max(r.Start, 0) {
					live = append(live, k)
				}
			}
			slices.SortFunc(live, func(a, b int) int {
				if c := cmp.Compare(in.Ranges[b].Bytes, in.Ranges[a].Bytes); c != 0 {
					return c
				}
				if c := cmp.Compare(in.Ranges[a].Start, in.Ranges[b].Start); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			for _, k := range live[:min(len(live), opt.PerRegion)] {
				want[k] = true
			}
		}
		got := map[int]bool{}
		groupOf := groupIndex(tl, in)
		for k, s := range tl.Singles {
			got[s.Range] = true
			if s.Group != groupOf[in.Ranges[s.Range].Stack] {
				t.Errorf("seed %d: single %d (range %d) in group %d, its stack's is %d", seed, k, s.Range, s.Group, groupOf[in.Ranges[s.Range].Stack])
			}
			if k > 0 && in.Ranges[s.Range].Start < in.Ranges[tl.Singles[k-1].Range].Start {
				t.Errorf("seed %d: singles not ordered by start at %d", seed, k)
			}
		}
		if len(got) != len(want) || len(tl.Singles) != len(got) {
			t.Errorf("seed %d: %d singles (%d distinct), want %d", seed, len(tl.Singles), len(got), len(want))
		}
		for k := range want {
			if !got[k] {
				t.Errorf("seed %d: range %d (%d bytes, entries %d to %d) is among its regions' largest but not a single", seed, k, in.Ranges[k].Bytes, in.Ranges[k].Start, in.Ranges[k].End)
			}
		}
		if len(tl.Singles) > opt.Regions*opt.PerRegion {
			t.Errorf("seed %d: %d singles, more than %d regions of %d", seed, len(tl.Singles), opt.Regions, opt.PerRegion)
		}
	}
}

// TestStepEnvelope: each step's first minimum, first maximum and last
// entry are drawn, with the peak, within the points allowed; steps are
// joined only when they do not fit.
func TestStepEnvelope(t *testing.T) {
	in := randomTrace(11, 30000)
	var steps [][2]int
	for s := 1000; s+700 <= 29000; s += 700 {
		steps = append(steps, [2]int{s, s + 699})
	}
	for _, tc := range []struct {
		maxPoints, per int
	}{{2000, 1}, {3 * (len(steps) + 2), 1}, {3*(len(steps)+2) - 1, 2}, {100, 2}, {30, 5}} {
		tl := StackTimeline(in, StackTimelineOptions{Groups: 3, Buckets: 40, MaxPoints: 100})
		StepEnvelope(tl, in, steps, tc.maxPoints)
		if tl.StepsPerPoint != tc.per {
			t.Errorf("maxPoints %d: %d steps a point, want %d", tc.maxPoints, tl.StepsPerPoint, tc.per)
		}
		checkPoints(t, "envelope", in, tl, Level{Index: tl.Index, X: tl.X, Allocated: tl.Allocated, Active: tl.Active, Reserved: tl.Reserved,
			Groups: func() [][]int64 {
				var g [][]int64
				for _, grp := range tl.Groups {
					g = append(g, grp.Bytes)
				}
				return g
			}()})
		if len(tl.Index) > tc.maxPoints {
			t.Errorf("maxPoints %d: %d points", tc.maxPoints, len(tl.Index))
		}
		if tl.PeakPoint < 0 || tl.Index[tl.PeakPoint] != in.Peak {
			t.Errorf("maxPoints %d: the peak (entry %d) is not drawn", tc.maxPoints, in.Peak)
		}
		for k := 0; k < len(steps); k += tc.per {
			lo, hi := steps[k][0], steps[min(k+tc.per, len(steps))-1][1]
			seg := in.Allocated[lo : hi+1]
			for _, i := range []int{lo + slices.Index(seg, slices.Min(seg)), lo + slices.Index(seg, slices.Max(seg)), hi} {
				if _, ok := slices.BinarySearch(tl.Index, i); !ok {
					t.Fatalf("maxPoints %d: steps %d to %d (entries %d to %d) lack entry %d", tc.maxPoints, k, k+tc.per-1, lo, hi, i)
				}
			}
		}
	}
}
