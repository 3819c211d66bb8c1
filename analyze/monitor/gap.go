package monitor

import (
	"slices"
)

// Series is a step function of bytes over time: Values[i] holds from
// TimesUS[i] (microseconds since the Unix epoch, ascending) until the next
// time. It is how PyTorch's reserved bytes are known: after each trace
// entry of a snapshot, or at each record of a memory_stats() log.
type Series struct {
	TimesUS []int64
	Values  []int64
}

// Span returns the microseconds from the series' first time to its last
// (0 with fewer than two points).
func (s Series) Span() int64 {
	if len(s.TimesUS) < 2 {
		return 0
	}
	return s.TimesUS[len(s.TimesUS)-1] - s.TimesUS[0]
}

// At returns the value at t and whether t is within the series (from its
// first time to its last).
func (s Series) At(t int64) (int64, bool) {
	n := len(s.TimesUS)
	if n == 0 || t < s.TimesUS[0] || t > s.TimesUS[n-1] {
		return 0, false
	}
	i, found := slices.BinarySearch(s.TimesUS, t)
	if !found {
		i--
	}
	// Several entries may share a time: the value after the last of them.
	for i+1 < n && s.TimesUS[i+1] == t {
		i++
	}
	return s.Values[i], true
}

// GapPoint is one nvidia-smi sample set against PyTorch's reserved bytes at
// the same moment.
type GapPoint struct {
	TimeUS int64
	// Used is nvidia-smi's memory.used, Reserved PyTorch's reserved bytes,
	// Gap = Used - Reserved: memory on the GPU that the caching allocator
	// did not reserve.
	Used, Reserved, Gap int64
}

// GapJump is a lasting change of the gap: between the samples at AfterUS
// (the last at the old level) and TimeUS (the first at the new one) it
// moved by Bytes (positive: memory was taken outside PyTorch's allocator;
// negative: given back).
type GapJump struct {
	AfterUS, TimeUS int64
	Bytes           int64
}

// Gap is the memory nvidia-smi counts on a GPU that PyTorch's caching
// allocator did not reserve.
type Gap struct {
	// Points are the samples within the reserved series' time range.
	Points []GapPoint
	// Min, Median and Max are of Gap; MinAtUS is when Min was first seen.
	Min, Median, Max int64
	MinAtUS          int64
	// Jumps are the lasting changes of at least GapJumpMin.
	Jumps []GapJump
}

// GapJumpMin is the least change of the gap that [FindGap] reports as a
// jump, in bytes. nvidia-smi counts in MiB and samples on its own clock,
// so smaller changes are noise.
const GapJumpMin = 64 << 20

// gapWindow is how many samples on each side of a jump must agree.
const gapWindow = 3

// FindGap sets each sample of one GPU (in time order) against reserved at
// its time. Samples outside the reserved series' range are left out. A
// jump is where the median of the gapWindow samples after a point differs
// from the median of the gapWindow samples before it by at least
// GapJumpMin: a median ignores the sample or two where nvidia-smi and the
// trace disagree on the moment a segment came or went.
func FindGap(samples []SMISample, reserved Series) Gap {
	var g Gap
	for _, s := range samples {
		r, ok := reserved.At(s.TimeUS)
		if !ok {
			continue
		}
		g.Points = append(g.Points, GapPoint{TimeUS: s.TimeUS, Used: s.Used, Reserved: r, Gap: s.Used - r})
	}
	if len(g.Points) == 0 {
		return g
	}
	gaps := make([]int64, len(g.Points))
	g.Min, g.Max, g.MinAtUS = g.Points[0].Gap, g.Points[0].Gap, g.Points[0].TimeUS
	for i, p := range g.Points {
		gaps[i] = p.Gap
		if p.Gap < g.Min {
			g.Min, g.MinAtUS = p.Gap, p.TimeUS
		}
		g.Max = max(g.Max, p.Gap)
	}
	g.Median = median(gaps)
	for i := gapWindow; i+gapWindow <= len(gaps); i++ {
		d := median(gaps[i:i+gapWindow]) - median(gaps[i-gapWindow:i])
		if d >= GapJumpMin || d <= -GapJumpMin {
			// The jump is at the first sample of the new level.
			j := i
			for j < i+gapWindow-1 && abs(gaps[j]-gaps[i-1]) < GapJumpMin {
				j++
			}
			g.Jumps = append(g.Jumps, GapJump{AfterUS: g.Points[j-1].TimeUS, TimeUS: g.Points[j].TimeUS, Bytes: d})
			i += 2*gapWindow - 1
		}
	}
	return g
}

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}
