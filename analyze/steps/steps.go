package steps

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/snapview/snapview/analyze/internal/addrmap"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// Step detection thresholds.
const (
	// minSteps is the fewest repetitions that make steps.
	MinSteps = 3
	// patternPrefixSteps is how many optimizer steps the marker of the
	// iterations is looked for in (see leakSlices).
	patternPrefixSteps = 16
	// patternMaxCV is the largest coefficient of variation of the gaps
	// (in allocations) between a marker stack's allocations.
	patternMaxCV = 0.25
	// patternLooseCV is the same bound for a marker that brackets the
	// more frequent stacks: an eval loop's steps differ in length by the
	// number of tokens generated.
	patternLooseCV = 0.6
	// patternMinCover is the share of the trace a marker stack's
	// allocations must span.
	patternMinCover = 0.6
	// patternBracket is the share of a marker's intervals in which each
	// more frequent repeating stack must occur (see FindPattern).
	patternBracket = 0.8
	// patternMinFreed is the share of the trace's allocations that must
	// have been freed for steps to be found from a repeating allocation.
	patternMinFreed = 0.5
	// defaultSlices is the number of equal slices without steps.
	defaultSlices = 20
)

// LeakSlices cuts the trace up to entry at into steps (or equal slices),
// as source asks (nslices equal slices, 20 when 0, without steps); a source that finds nothing falls back to the next
// (annotation, then pattern, then slices).
//
// Unless asked for, steps from a repeating allocation are taken only when
// at least patternMinFreed of the trace's allocations were freed by entry
// at:
// training and inference steps free most of what they allocate, while the
// layers of a single forward pass (a trace that ends in an OOM during the
// first step) repeat as regularly but keep what they allocate.
func LeakSlices(s *snapshot.Snapshot, res *replay.Result, trace []snapshot.TraceEntry, at int, source StepSource, nslices int) ([]LeakSlice, Steps) {
	device := res.Device
	if at < 0 {
		return []LeakSlice{}, Steps{Source: StepsNone}
	}
	window := trace[:at+1]
	var st Steps
	var starts []int
	if source == StepsAuto || source == StepsAnnotation {
		st.Name, starts = FindAnnotation(s, device, window)
		st.Source = StepsAnnotation
	}
	if source == StepsAuto && starts != nil && strings.HasPrefix(st.Name, "Optimizer.step#") {
		// The optimizer's step is the end of an iteration (forward,
		// backward, step), not its start: cut there, a step would end
		// inside the next iteration's forward and backward, where a
		// training loop logs nothing. The input each iteration allocates
		// first marks where iterations start; when that marker repeats
		// as often as the optimizer steps (one more or less: a partial
		// iteration at an edge), its steps are the iterations.
		// The marker is looked for over the first few optimizer steps
		// (FindPattern costs a pass with maps over what it is given),
		// then its allocations are taken from the whole window.
		prefix := window
		if len(starts) > patternPrefixSteps {
			prefix = window[:starts[patternPrefixSteps]]
		}
		if marker, pre := FindPattern(prefix); pre != nil {
			var ps []int
			for i := range window {
				if window[i].Action == snapshot.ActionAlloc && window[i].Stack == marker {
					ps = append(ps, i)
				}
			}
			if len(ps) >= len(starts)-1 && len(ps) <= len(starts)+1 {
				st = Steps{Source: StepsPattern, Marker: marker}
				starts = ps
			}
		}
	}
	if starts == nil && source == StepsAuto {
		// Only now: the share costs a pass when res has no Allocs.
		_, freed := freedShareOf(res, window, at)
		if freed < patternMinFreed {
			source = StepsSlices
		}
	}
	if starts == nil &&
		(source == StepsAuto || source == StepsAnnotation || source == StepsPattern) {
		st.Name = ""
		st.Marker, starts = FindPattern(window)
		st.Source = StepsPattern
	}
	if starts == nil {
		k := nslices
		if k <= 0 {
			k = defaultSlices
		}
		k = min(k, len(window))
		st = Steps{Source: StepsSlices}
		starts = make([]int, k)
		for j := range k {
			starts[j] = j * len(window) / k
		}
	}
	out := make([]LeakSlice, 0, len(starts)+1)
	add := func(step, start, end int) {
		sl := LeakSlice{Step: step, Start: start, End: end}
		if window[0].Flags&snapshot.FlagTime != 0 {
			sl.StartUS, sl.EndUS = window[start].TimeUS, window[end].TimeUS
		}
		out = append(out, sl)
	}
	if starts[0] > 0 {
		st.Prologue = true
		add(0, 0, starts[0]-1)
	}
	for j, start := range starts {
		end := at
		if j+1 < len(starts) {
			end = starts[j+1] - 1
		}
		add(j+1, start, end)
	}
	st.Count = len(starts)
	return out, st
}

// FreedShare returns the number of allocations made in entries 0 to at
// and the share of them freed (free_requested) by entry at; 0 without
// any.
func FreedShare(allocs []replay.Allocation, at int) (int, float64) {
	n, freed := 0, 0
	for i := range allocs {
		a := &allocs[i]
		if a.AllocIndex < 0 {
			continue
		}
		if a.AllocIndex > at {
			break
		}
		n++
		if !a.Alive(at) {
			freed++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return n, float64(freed) / float64(n)
}

// freedShareOf is freedShare over res.Allocs, or, for a replay without
// them (Peaks [replay.Run]), over the trace entries up to at (window): an
// alloc entry's allocation is freed by its address's next free_requested.
func freedShareOf(res *replay.Result, window []snapshot.TraceEntry, at int) (int, float64) {
	if res.Allocs != nil || len(window) == 0 {
		return FreedShare(res.Allocs, at)
	}
	live := map[snapshot.Addr]bool{}
	n, freed := 0, 0
	for i := range window[:at+1] {
		switch e := &window[i]; e.Action {
		case snapshot.ActionAlloc:
			live[e.Addr] = true
			n++
		case snapshot.ActionFreeRequested:
			if live[e.Addr] {
				delete(live, e.Addr)
				freed++
			}
		}
	}
	if n == 0 {
		return 0, 0
	}
	return n, float64(freed) / float64(n)
}

var digitRun = regexp.MustCompile(`[0-9]+`)

// FindAnnotation looks for a record_function range of device that
// repeats once per training step inside window, and returns its name
// (digits shown as N) and the entries where its occurrences start,
// ascending and distinct; nil when none repeats at least minSteps times
// or the trace has no timestamps.
//
// Preferred, in order: the profiler's ProfilerStep#N; a numbered range
// whose name says step, iter or batch ("## step 3 ##"); the optimizer's
// own Optimizer.step#... range. Among equals, the one with the most
// occurrences, then the name.
func FindAnnotation(s *snapshot.Snapshot, device int, window []snapshot.TraceEntry) (string, []int) {
	if len(window) == 0 || window[0].Flags&snapshot.FlagTime == 0 || len(s.Annotations) == 0 {
		return "", nil
	}
	t0, t1 := window[0].TimeUS, window[len(window)-1].TimeUS
	type family struct {
		name     string
		first    string
		numbered bool
		times    []int64
	}
	fams := map[string]*family{}
	for _, a := range s.Annotations {
		if a.Stage != "START" || a.Device != device || a.TimeUS < t0 || a.TimeUS > t1 {
			continue
		}
		key := digitRun.ReplaceAllString(a.Name, "N")
		f := fams[key]
		if f == nil {
			f = &family{name: key, first: a.Name}
			fams[key] = f
		}
		if a.Name != f.first {
			f.numbered = true
		}
		f.times = append(f.times, a.TimeUS)
	}
	tier := func(f *family) int {
		lower := strings.ToLower(f.name)
		switch {
		case strings.HasPrefix(f.name, "ProfilerStep#"):
			return 0
		case f.numbered && (strings.Contains(lower, "step") || strings.Contains(lower, "iter") || strings.Contains(lower, "batch")):
			return 1
		case strings.HasPrefix(f.name, "Optimizer.step#"):
			return 2
		}
		return -1
	}
	var best *family
	bestTier := math.MaxInt
	for _, f := range fams {
		t := tier(f)
		if t < 0 || len(f.times) < MinSteps {
			continue
		}
		if best == nil || t < bestTier ||
			t == bestTier && (len(f.times) > len(best.times) || len(f.times) == len(best.times) && f.name < best.name) {
			best, bestTier = f, t
		}
	}
	if best == nil {
		return "", nil
	}
	starts := make([]int, 0, len(best.times))
	for _, t := range best.times {
		i := sort.Search(len(window), func(i int) bool { return window[i].TimeUS >= t })
		if i < len(window) {
			starts = append(starts, i)
		}
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	if len(starts) < MinSteps {
		return "", nil
	}
	return best.name, starts
}

// FindPattern looks for the allocation that marks each training step
// when no record_function range does: the outermost repeating unit.
//
// Candidates are the stacks allocated at a regular interval (gaps with a
// coefficient of variation at most patternMaxCV, or patternLooseCV for one
// that brackets the rest) over most of the window (patternMinCover), whose allocations are transient: most of them freed
// before the stack allocates twice more (an input batch is; a cache kept
// every k-th step is not, and is what the steps should reveal, not mark).
// Of those, the marker brackets the rest: every candidate allocated more
// often occurs in at least patternBracket of its intervals, as a layer
// occurs in every forward pass and a forward pass in every step, while the
// step's own marker is absent from most intervals of a layer or a
// generated token. The marker is the candidate with the fewest
// allocations that brackets the rest (the outermost); on a tie, the one
// allocated first (where each step starts, typically the input batch).
// Without a bracketing candidate, the count most candidates share wins,
// as before. It returns the marker stack and its allocations' entries;
// nil when no stack qualifies.
//
// Positions are counted in allocations, not entries: frees come in bursts
// (a garbage collection, the end of a backward pass) that would make
// steps look irregular, while a training step allocates much the same
// every time.
func FindPattern(window []snapshot.TraceEntry) (snapshot.StackID, []int) {
	pos, entry, freedAt := allocOrdinals(window)
	cands := patternCandidates(pos, freedAt, len(entry))
	if len(cands) == 0 {
		return snapshot.NoStack, nil
	}
	// brackets reports whether every candidate allocated more often than
	// x occurs in at least patternBracket of x's intervals.
	brackets := func(x cand) bool {
		px := pos[x.stack]
		for _, y := range cands {
			if y.count <= x.count {
				continue
			}
			py := pos[y.stack]
			in, j := 0, 0
			for i := 0; i+1 < len(px); i++ {
				for j < len(py) && py[j] <= px[i] {
					j++
				}
				if j < len(py) && py[j] < px[i+1] {
					in++
				}
			}
			if float64(in) < patternBracket*float64(len(px)-1) {
				return false
			}
		}
		return true
	}
	var outer []cand
	for _, c := range cands {
		if brackets(c) {
			outer = append(outer, c)
		}
	}
	if len(outer) > 0 {
		slices.SortFunc(outer, func(x, y cand) int {
			if c := cmp.Compare(x.count, y.count); c != 0 {
				return c
			}
			if c := cmp.Compare(x.first, y.first); c != 0 {
				return c
			}
			return cmp.Compare(x.stack, y.stack)
		})
		cands = outer
	} else {
		cands = slices.DeleteFunc(cands, func(c cand) bool { return !c.regular })
		if len(cands) == 0 {
			return snapshot.NoStack, nil
		}
		votes := map[int]int{}
		for _, c := range cands {
			votes[c.count]++
		}
		// The most common count; ties go to the fewer steps (the outer loop).
		slices.SortFunc(cands, func(x, y cand) int {
			if c := cmp.Compare(votes[y.count], votes[x.count]); c != 0 {
				return c
			}
			if c := cmp.Compare(x.count, y.count); c != 0 {
				return c
			}
			if c := cmp.Compare(x.first, y.first); c != 0 {
				return c
			}
			return cmp.Compare(x.stack, y.stack)
		})
	}
	starts := pos[cands[0].stack]
	for j, ord := range starts {
		starts[j] = entry[ord]
	}
	return cands[0].stack, starts
}

// allocOrdinals numbers the allocations of window in order: pos holds
// each stack's alloc ordinals, entry the entry of each ordinal, and
// freedAt, for an allocation freed in window, the number of allocations
// made by the time it was freed.
func allocOrdinals(window []snapshot.TraceEntry) (pos map[snapshot.StackID][]int, entry []int, freedAt map[int]int) {
	pos = map[snapshot.StackID][]int{}
	freedAt = map[int]int{}
	live := addrmap.New(1024) // address -> alloc ordinal
	for i := range window {
		switch e := &window[i]; e.Action {
		case snapshot.ActionAlloc:
			if e.Stack != snapshot.NoStack {
				pos[e.Stack] = append(pos[e.Stack], len(entry))
			}
			live.Set(e.Addr, int32(len(entry)))
			entry = append(entry, i)
		case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
			if o, ok := live.Get(e.Addr); ok {
				freedAt[int(o)] = len(entry)
				live.Del(e.Addr)
			}
		}
	}
	return pos, entry, freedAt
}

// cand is a stack [FindPattern] may take as the steps' marker.
type cand struct {
	stack   snapshot.StackID
	count   int
	first   int
	regular bool // gaps within patternMaxCV; the others must bracket
}

// patternCandidates returns the stacks allocated at a regular interval
// over most of n allocations whose allocations are transient (see
// [FindPattern]).
func patternCandidates(pos map[snapshot.StackID][]int, freedAt map[int]int, n int) []cand {
	var cands []cand
	for id, p := range pos {
		c := len(p)
		if c < MinSteps {
			continue
		}
		span := float64(p[c-1] - p[0])
		mean := span / float64(c-1)
		if mean < 1 || span+mean < patternMinCover*float64(n) {
			continue
		}
		var ss float64
		for i := 1; i < c; i++ {
			d := float64(p[i]-p[i-1]) - mean
			ss += d * d
		}
		cv := math.Sqrt(ss/float64(c-1)) / mean
		if cv > patternLooseCV {
			continue
		}
		// Transient: most allocations freed before the stack's last one.
		transient := 0
		for i := 0; i+1 < c; i++ {
			if f, ok := freedAt[p[i]]; ok && f <= p[c-1] {
				transient++
			}
		}
		if 2*transient < c-1 {
			continue
		}
		cands = append(cands, cand{id, c, p[0], cv <= patternMaxCV})
	}
	return cands
}
