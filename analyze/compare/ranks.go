package compare

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// OutlierShare is how far from the median a rank's figure must be to be
// flagged: 10%.
const OutlierShare = 0.10

// RankFigure names a per-rank figure that [CompareRanks] summarises.
type RankFigure string

const (
	RankPeakAllocated RankFigure = "peak_allocated_bytes"
	RankPeakReserved  RankFigure = "peak_reserved_bytes"
	// RankReservedMinusAllocated is reserved minus allocated at the
	// allocated peak: the memory cached but not in use then.
	RankReservedMinusAllocated RankFigure = "reserved_minus_allocated_bytes"
)

// rankFigures are the figures summarised, in order.
var rankFigures = []struct {
	name RankFigure
	get  func(*Side) int64
}{
	{RankPeakAllocated, func(s *Side) int64 { return s.PeakAllocated }},
	{RankPeakReserved, func(s *Side) int64 { return s.PeakReserved }},
	{RankReservedMinusAllocated, func(s *Side) int64 { return s.ReservedAtPeakAllocated - s.PeakAllocated }},
}

// known reports whether s's peak figures are known: a side whose history
// is unknown (no trace: the state at the dump only; a replay that ends off
// the file) has no peak to compare, and [CompareRanks] leaves it out of the
// spreads, the outliers, the median rank and the peak timing.
func known(s *Side) bool { return s.Stats.Known.History != stats.Unknown }

// rankNumberRE finds a rank in a file name: rank3, rank_3, rank-3, RANK03.
var rankNumberRE = regexp.MustCompile(`(?i)rank[-_]?(\d+)`)

// RankNumber returns the rank a snapshot's file name gives (the last
// "rankN" in its base name: ddp_rank10.pickle is 10; torchtitan's
// 000003_step_10.pickle and Megatron-Bridge's memory_trace_3.pickle are
// 3, see [ParseRankPath]; else the last "rankN" of its directory's name:
// rank1/snapshot.pickle is 1), ok false when neither has one.
func RankNumber(path string) (n int, ok bool) {
	base := filepath.Base(path)
	for _, re := range []*regexp.Regexp{titanRankRE, megatronRankRE} {
		if m := re.FindStringSubmatch(base); m != nil {
			n, err := strconv.Atoi(m[1])
			return n, err == nil
		}
	}
	m := rankNumberRE.FindAllStringSubmatch(base, -1)
	if len(m) == 0 {
		// a file named for what it is, in a directory named for its rank:
		// rank1/snapshot.pickle
		m = rankNumberRE.FindAllStringSubmatch(filepath.Base(filepath.Dir(path)), -1)
	}
	if len(m) == 0 {
		return 0, false
	}
	n, err := strconv.Atoi(m[len(m)-1][1])
	return n, err == nil
}

// RankSpread is one figure over the ranks: min, median and max (bytes),
// the ranks holding them (indexes into Ranks.Sides), and the spread
// (max minus min).
type RankSpread struct {
	Figure                       RankFigure
	Min, Median, Max             int64
	MinRank, MedianRank, MaxRank int
	Spread                       int64
}

// RankOutlier is a rank whose figure is more than OutlierShare away from
// the median rank's.
type RankOutlier struct {
	Rank   int // index into Ranks.Sides
	Figure RankFigure
	Value  int64
	Median int64
	// Deviation is (Value - Median) / Median.
	Deviation float64
}

// VaryingStack is a stack key whose live bytes at each rank's peak vary
// across ranks.
type VaryingStack struct {
	Key    string
	Frames []snapshot.Frame
	// Bytes has one value per rank (0 where the rank has none live, and
	// for a rank in Ranks.Unknown, which is left out).
	Bytes    []int64
	Min, Max int64
	MinRank  int
	MaxRank  int
	Spread   int64
}

// Ranks compares the ranks of a distributed run (or the devices of one
// file), each a Side taken at its own allocated peak.
type Ranks struct {
	Sides []*Side
	// Spreads summarise each figure.
	Spreads []RankSpread
	// Outliers are the ranks beyond OutlierShare of the median, by
	// figure, largest deviation first.
	Outliers []RankOutlier
	// Stacks are the stack keys whose bytes at each rank's peak vary the
	// most (largest spread first), at most the top asked for.
	Stacks []VaryingStack
	// Median is the median rank by peak allocated bytes (the lower middle
	// one of an even count); Outlier the rank furthest from it by peak
	// allocated bytes (then reserved), -1 when no rank is flagged; Diff
	// compares the median rank (base) with the outlier (new).
	Median, Outlier int
	Diff            *Diff
	// PeaksApart is true when the ranks' allocated peaks fall at different
	// steps, or apart on one clock (see peakClock): the rows compare each
	// rank at its own peak, not one instant.
	PeaksApart bool
	// OneClock is true when every rank has time_us: ClockOrigin is then
	// the earliest first entry's time_us, the origin of every rank's
	// times, and PeakSpreadUS the distance between the earliest and the
	// latest allocated peak on that clock (microseconds).
	OneClock                  bool
	ClockOrigin, PeakSpreadUS int64
	// Aligned is true when the sides were lined up on their first steps
	// (AlignSteps, `--align step`): the clock is then time_us with each
	// side moved by its Side.ShiftUS, and FirstStepsApartUS is the most
	// any side was moved (microseconds).
	Aligned           bool
	FirstStepsApartUS int64
	// Unknown are the ranks whose peak figures are unknown (Stats.Known.
	// History), left out of Spreads, Outliers, Median and PeaksApart.
	Unknown []int
}

// CompareRanks compares sides, each a rank taken at its allocated peak
// ([MeasureSide] at Result.PeakIndex). top bounds Ranks.Stacks (0: all).
func CompareRanks(sides []*Side, top int) *Ranks {
	rk := &Ranks{Sides: sides, Spreads: []RankSpread{}, Outliers: []RankOutlier{}, Stacks: []VaryingStack{}, Median: -1, Outlier: -1, Unknown: []int{}}
	if len(sides) == 0 {
		return rk
	}
	for _, s := range sides {
		rk.Aligned = s.Aligned
		rk.FirstStepsApartUS = max(rk.FirstStepsApartUS, s.ShiftUS)
	}
	var idxKnown []int // the ranks whose figures are known
	for i, s := range sides {
		if known(s) {
			idxKnown = append(idxKnown, i)
		} else {
			rk.Unknown = append(rk.Unknown, i)
		}
	}
	for _, f := range rankFigures {
		if len(idxKnown) == 0 {
			break
		}
		idx := slices.Clone(idxKnown)
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(f.get(sides[a]), f.get(sides[b])) })
		med := idx[(len(idx)-1)/2]
		sp := RankSpread{
			Figure: f.name, Min: f.get(sides[idx[0]]), MinRank: idx[0],
			Median: f.get(sides[med]), MedianRank: med,
			Max: f.get(sides[idx[len(idx)-1]]), MaxRank: idx[len(idx)-1],
		}
		sp.Spread = sp.Max - sp.Min
		rk.Spreads = append(rk.Spreads, sp)
		if f.name == RankPeakAllocated {
			rk.Median = med
		}
		if f.name == RankReservedMinusAllocated || sp.Median <= 0 {
			continue // a small cache is no outlier; nothing to compare with 0
		}
		for _, i := range idxKnown {
			s := sides[i]
			dev := float64(f.get(s)-sp.Median) / float64(sp.Median)
			if dev > OutlierShare || dev < -OutlierShare {
				rk.Outliers = append(rk.Outliers, RankOutlier{Rank: i, Figure: f.name, Value: f.get(s), Median: sp.Median, Deviation: dev})
			}
		}
	}
	slices.SortStableFunc(rk.Outliers, func(a, b RankOutlier) int {
		if c := cmp.Compare(abs(b.Deviation), abs(a.Deviation)); c != 0 {
			return c
		}
		return cmp.Compare(a.Rank, b.Rank)
	})
	// The outlier to diff: by peak allocated first, then reserved.
	for _, fig := range []RankFigure{RankPeakAllocated, RankPeakReserved} {
		for _, o := range rk.Outliers {
			if o.Figure == fig {
				rk.Outlier = o.Rank
				break
			}
		}
		if rk.Outlier >= 0 {
			break
		}
	}
	if rk.Outlier >= 0 {
		rk.Diff = Compare(sides[rk.Median], sides[rk.Outlier])
	}
	rk.Stacks = varyingStacks(sides, idxKnown, top)
	var knownSides []*Side
	for _, i := range idxKnown {
		knownSides = append(knownSides, sides[i])
	}
	rk.PeaksApart, rk.OneClock, rk.ClockOrigin, rk.PeakSpreadUS = peakClock(knownSides)
	return rk
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// varyingStacks returns the stack keys whose bytes vary most across the
// sides of idx (the ranks whose peaks are known), largest spread first,
// then key; keys with no spread are left out.
func varyingStacks(sides []*Side, idx []int, top int) []VaryingStack {
	byKey := map[string]*VaryingStack{}
	var keys []string
	for _, r := range idx {
		for _, t := range sides[r].Stacks {
			v := byKey[t.Key]
			if v == nil {
				v = &VaryingStack{Key: t.Key, Bytes: make([]int64, len(sides))}
				v.Frames = t.Frames
				byKey[t.Key] = v
				keys = append(keys, t.Key)
			}
			v.Bytes[r] = t.Bytes
		}
	}
	out := []VaryingStack{}
	for _, k := range keys {
		v := byKey[k]
		v.Min, v.Max, v.MinRank, v.MaxRank = v.Bytes[idx[0]], v.Bytes[idx[0]], idx[0], idx[0]
		for _, r := range idx {
			b := v.Bytes[r]
			if b < v.Min {
				v.Min, v.MinRank = b, r
			}
			if b > v.Max {
				v.Max, v.MaxRank = b, r
			}
		}
		v.Spread = v.Max - v.Min
		if v.Spread > 0 {
			out = append(out, *v)
		}
	}
	slices.SortFunc(out, func(a, b VaryingStack) int {
		if c := cmp.Compare(b.Spread, a.Spread); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if top > 0 && len(out) > top {
		out = out[:top]
	}
	return out
}

// peakClock puts the sides' allocated peaks on one clock and says
// whether they fall apart. When every side has time_us, the clock is
// time_us itself (microseconds since the epoch: one clock for the
// processes of a machine, and NTP-close across machines), so ranks that
// started recording at other times are still compared on it; origin is the
// earliest first entry and spread the distance between the earliest and
// the latest peak (microseconds). The peaks are apart when every side has
// steps and they differ; else, on time_us, when spread is above 5% of the
// time from origin to the latest peak (and at least 10 ms: ranks are never
// in lockstep to the microsecond); else, without timestamps, when their
// shares of each trace's entries differ by more than 1%.
func peakClock(sides []*Side) (apart, oneClock bool, origin, spread int64) {
	if len(sides) == 0 {
		return false, false, 0, 0
	}
	steps, times := true, true
	for _, s := range sides {
		steps = steps && s.PeakAllocatedStep >= 0
		times = times && s.HasTime && s.PeakAllocatedAt >= 0
	}
	if times {
		origin = sides[0].FirstUS
		lo, hi := sides[0].PeakAllocatedUS, sides[0].PeakAllocatedUS
		for _, s := range sides[1:] {
			origin = min(origin, s.FirstUS)
			lo, hi = min(lo, s.PeakAllocatedUS), max(hi, s.PeakAllocatedUS)
		}
		spread = hi - lo
		oneClock = true
	}
	if len(sides) < 2 {
		return false, oneClock, origin, spread
	}
	if steps {
		for _, s := range sides[1:] {
			if s.PeakAllocatedStep != sides[0].PeakAllocatedStep {
				return true, oneClock, origin, spread
			}
		}
		return false, oneClock, origin, spread
	}
	if times {
		var latest int64
		for _, s := range sides {
			latest = max(latest, s.PeakAllocatedUS-origin)
		}
		return spread > max(10_000, latest/20), oneClock, origin, spread
	}
	at := func(s *Side) float64 {
		if s.Entries == 0 {
			return 1
		}
		return float64(s.PeakAllocatedAt+1) / float64(s.Entries)
	}
	lo, hi := at(sides[0]), at(sides[0])
	for _, s := range sides[1:] {
		lo, hi = min(lo, at(s)), max(hi, at(s))
	}
	return hi-lo > 0.01*hi, oneClock, origin, spread
}

// String names the figure for a human: "peak allocated".
func (f RankFigure) String() string {
	switch f {
	case RankPeakAllocated:
		return "peak allocated"
	case RankPeakReserved:
		return "peak reserved"
	case RankReservedMinusAllocated:
		return "cached at peak"
	}
	return fmt.Sprint(string(f))
}
