package monitor

import (
	"slices"
)

// Climb is the verdict on whether a series of memory figures (bytes at the
// end of each step, or nvidia-smi samples) keeps climbing at its end: the
// advice in the field is to log them every step and to stop when memory
// keeps climbing.
type Climb struct {
	// Climbing is true when the series keeps reaching new highs up to its
	// end; see [FindClimb].
	Climbing bool
	// Start is the index of the first new high of the climb (-1 when not
	// climbing): the point where it started.
	Start int
	// Base is the value just before Start, End the last value; Rise is
	// End - Base, in the series' unit (bytes).
	Base, End, Rise int64
	// Highs counts the new highs from Start to the end; Points counts the
	// points from Start to the end.
	Highs, Points int
	// Max is the highest value and MaxAt its first index.
	Max   int64
	MaxAt int
}

// climbMinHighs is how many new highs a climb needs.
const climbMinHighs = 3

// FindClimb decides whether y (values at increasing x: step numbers or
// times) keeps climbing, and from where.
//
// A point is a new high when it is above every point before it. The climb
// is the run of new highs at the end of the series in which no two
// consecutive highs, and not the last high and the end, are further apart
// than the gap limit: four times the median x spacing, or a fifth of the
// whole x span if that is more (so a leak that adds a block every few
// steps, or a reserved figure that grows a 20 MiB segment at a time, is
// one climb). A new high that rose more than four times the median rise
// of the run's highs is a jump, not part of a climb: the run starts after
// the last such jump when at least three highs follow it (the warm-up's
// weights and optimizer state, the CUDA context, a buffer taken once are
// left out). The series is climbing when the run has at least three new highs
// and its end is above the point before its start.
func FindClimb(x []float64, y []int64) Climb {
	c := Climb{Start: -1, MaxAt: -1}
	n := min(len(x), len(y))
	if n == 0 {
		return c
	}
	c.End = y[n-1]
	var highs []int
	c.Max, c.MaxAt = y[0], 0
	for i := 1; i < n; i++ {
		if y[i] > c.Max {
			c.Max, c.MaxAt = y[i], i
			highs = append(highs, i)
		}
	}
	if len(highs) < climbMinHighs || n < 2 {
		return c
	}
	spacing := make([]float64, 0, n-1)
	for i := 1; i < n; i++ {
		spacing = append(spacing, x[i]-x[i-1])
	}
	slices.Sort(spacing)
	limit := max(4*spacing[len(spacing)/2], (x[n-1]-x[0])/5)
	last := len(highs) - 1
	if x[n-1]-x[highs[last]] > limit {
		return c
	}
	first := last
	for first > 0 && x[highs[first]]-x[highs[first-1]] <= limit {
		first--
	}
	run := highs[first:]
	if len(run) >= climbMinHighs {
		rises := make([]int64, len(run))
		for i, h := range run {
			prev := y[0]
			if i > 0 {
				prev = y[run[i-1]]
			} else if first > 0 {
				prev = y[highs[first-1]]
			}
			rises[i] = y[h] - prev
		}
		sorted := slices.Clone(rises)
		slices.Sort(sorted)
		med := sorted[len(sorted)/2]
		skip := 0
		for k, r := range rises {
			if r > 4*med && len(run)-(k+1) >= climbMinHighs {
				skip = k + 1
			}
		}
		run = run[skip:]
	}
	if len(run) < climbMinHighs {
		return c
	}
	start := run[0]
	c.Base = y[start-1]
	c.Rise = c.End - c.Base
	if c.Rise <= 0 {
		return c
	}
	c.Climbing, c.Start = true, start
	c.Highs, c.Points = len(run), n-start
	return c
}
