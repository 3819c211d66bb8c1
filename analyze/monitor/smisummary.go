package monitor

import (
	"cmp"
	"slices"
)

// GPUSummary sums up one GPU's nvidia-smi samples. Bytes are bytes (from
// nvidia-smi's MiB); times are microseconds since the Unix epoch.
type GPUSummary struct {
	GPU     int
	Samples int
	// FirstUS and LastUS are the times of the first and last sample;
	// IntervalUS is the median time between samples.
	FirstUS, LastUS, IntervalUS int64
	// Total is memory.total (0 when the log does not have it).
	Total int64
	// Min, Median and Max are of memory.used; MaxAtUS is when Max was
	// first seen.
	Min, Median, Max int64
	MaxAtUS          int64
	// First and Last are memory.used in the first and last sample.
	First, Last int64
	// Climb is [FindClimb] over memory.used against time; its indexes are
	// into Series.
	Climb Climb
	// Series are the GPU's samples in time order.
	Series []SMISample
}

// SummarizeSMI returns one summary per GPU of the log, by index. Samples
// of a GPU are put in time order (stable, so rows with equal timestamps
// keep their file order).
func SummarizeSMI(l *SMILog) []GPUSummary {
	var out []GPUSummary
	// Each GPU's samples in file order, in one pass (a pass per GPU was
	// quadratic in the GPUs: 113 s for a 10 MB log).
	byGPU := map[int][]SMISample{}
	for _, s := range l.Samples {
		byGPU[s.GPU] = append(byGPU[s.GPU], s)
	}
	for _, gpu := range l.GPUs() {
		ss := byGPU[gpu]
		slices.SortStableFunc(ss, func(a, b SMISample) int { return cmp.Compare(a.TimeUS, b.TimeUS) })
		g := GPUSummary{GPU: gpu, Samples: len(ss), Series: ss,
			FirstUS: ss[0].TimeUS, LastUS: ss[len(ss)-1].TimeUS,
			First: ss[0].Used, Last: ss[len(ss)-1].Used, Min: ss[0].Used, Max: ss[0].Used, MaxAtUS: ss[0].TimeUS}
		used := make([]int64, len(ss))
		x := make([]float64, len(ss))
		var gaps []int64
		for i, s := range ss {
			used[i] = s.Used
			x[i] = float64(s.TimeUS - ss[0].TimeUS)
			g.Total = max(g.Total, s.Total)
			g.Min = min(g.Min, s.Used)
			if s.Used > g.Max {
				g.Max, g.MaxAtUS = s.Used, s.TimeUS
			}
			if i > 0 {
				gaps = append(gaps, s.TimeUS-ss[i-1].TimeUS)
			}
		}
		g.Median = median(used)
		if len(gaps) > 0 {
			g.IntervalUS = median(gaps)
		}
		g.Climb = FindClimb(x, used)
		out = append(out, g)
	}
	return out
}

// median returns the lower median of v (v is not changed).
func median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
