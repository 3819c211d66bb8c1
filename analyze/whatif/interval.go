package whatif

import (
	"slices"

	"github.com/snapview/snapview/analyze/allocator"
)

// capStep is the step of the cap search, bytes: every segment and every
// expandable-segment page is a multiple of 2 MiB (kSmallBuffer), so the
// reserved bytes alloc_block compares with the cap are too, and caps
// within one step of each other give the same run (but for
// garbage_collection_threshold, whose threshold is a fraction of the cap:
// there the search is to this step).
const capStep = allocator.SmallBuffer

// clone returns a deep copy of s with no observer: a simulation that
// continues from where s is.
func (s *sim) clone() *sim {
	c := *s
	c.obs = nil
	c.ckpt, c.ckptOn, c.steps = nil, false, 0
	c.blocks = slices.Clone(s.blocks)
	c.freeB = slices.Clone(s.freeB)
	c.es = slices.Clone(s.es)
	c.blockOf = slices.Clone(s.blockOf)
	c.pending = slices.Clone(s.pending)
	c.pools = make([]bpool, len(s.pools))
	for i := range s.pools {
		c.pools[i] = s.pools[i]
		c.pools[i].blocks = s.pools[i].blocks.clone()
		c.pools[i].unmapped = s.pools[i].unmapped.clone()
	}
	return &c
}

func (s *freeSet) clone() freeSet {
	c := freeSet{byAddr: s.byAddr, chunks: make([][]bkey, len(s.chunks))}
	for i, ch := range s.chunks {
		c.chunks[i] = append(make([]bkey, 0, max(len(ch), 16)), ch...)
	}
	return c
}

// mayBind reports whether the cap may change what request o does: the
// new segment it could need would pass the cap (alloc_block's check), or
// reserved is over garbage_collection_threshold x the cap
// (garbage_collect_cached_blocks). Before the first such request a run
// under any higher cap is the same run.
func (s *sim) mayBind(o *op) bool {
	if s.limit <= 0 || o.size < 0 || o.size > maxRequest {
		return false
	}
	need := allocator.AllocationSize(s.cfg.RoundSize(o.size))
	if s.reserved+need > s.limit {
		return true
	}
	return s.gcOn && s.reserved > int64(s.cfg.GarbageCollectionThreshold*float64(s.limit))
}

// CapFit is how one setting fares over the interval of caps the run may
// have had.
type CapFit struct {
	// AtMin and AtMax: no request fails at the interval's lower and upper
	// bound.
	AtMin, AtMax bool
	// From is the smallest cap, from the interval's lower bound up, under
	// which the setting runs without an OOM, bytes; 0 when none was found
	// (it fails with no cap too, or the search's budget ran out first).
	// Caps below the lower bound are not searched: the file's own run
	// reserved that much.
	From int64
	// FromExact is false when the search stopped on its budget: From is
	// then a cap the setting fits under, and the smallest lies between
	// FromLow (where it failed) and From.
	FromExact bool
	FromLow   int64
	// Ops counts the simulation steps the search took beyond the run at
	// the lower bound.
	Ops int64
}

// searchCap finds how the setting of base, a simulation run at the
// interval's lower bound lo with a checkpoint (base.ckpt, taken before the
// first request the cap could change), fares at the upper bound hi and
// from which cap on it fits. Every run starts from the checkpoint, so the
// search costs the part of the trace after it, at most budget simulation
// steps in all: the runs at hi and with no cap are always made, a
// bisection step only while its run fits in the budget (then the result
// is a bound, FromExact false).
func searchCap(base *sim, out Outcome, lo, hi int64, budget int64) CapFit {
	f := CapFit{AtMin: out.OOMs == 0, FromExact: true}
	if base.ckpt == nil {
		// The cap never came into play: the same run under any cap from lo.
		f.AtMax = f.AtMin
		if f.AtMin {
			f.From = lo
		}
		return f
	}
	// ck is a state valid for every cap from bottom up: the copy a run
	// under bottom took where its cap first mattered (a run under a
	// higher cap is the same run up to there).
	ck, ckOp := base.ckpt, base.ckptOp
	bottom := lo
	// try runs under limit from ck; a failing run's own checkpoint
	// becomes ck.
	try := func(limit int64) Outcome {
		c := ck.clone()
		c.limit = limit
		c.gcOn = limit > 0 && c.cfg.GarbageCollectionThreshold > 0
		c.ckptOn = limit > 0
		o := c.runFrom(ckOp)
		f.Ops += c.steps
		if o.OOMs > 0 && limit > 0 && c.ckpt != nil {
			ck, ckOp, bottom = c.ckpt, c.ckptOp, limit
		}
		return o
	}
	if f.AtMin {
		f.From = lo
		f.AtMax = hi == lo || try(hi).OOMs == 0
		return f
	}
	// The lowest cap known to fit: hi, else the peak the setting reaches
	// with no cap (with garbage collection, checked under that cap).
	var top int64
	if hi > lo && try(hi).OOMs == 0 {
		f.AtMax, top = true, hi
	} else {
		u := try(0)
		if u.OOMs > 0 {
			return f // fails with no cap: a request no cap serves
		}
		top = max(u.PeakReserved, hi+1)
		if base.cfg.GarbageCollectionThreshold > 0 && try(top).OOMs > 0 {
			return f
		}
	}
	// Bisect between a cap that fails (bottom) and one that fits (top),
	// in steps of capStep: kb fails, kt fits.
	// A cap fits as the start of its step does (but for garbage
	// collection, searched to the step).
	kb, kt := bottom/capStep, top/capStep
	if kt <= kb {
		kt = kb + 1
	}
	for kt-kb > 1 {
		if f.Ops+int64(len(base.prog.ops)-ckOp) > budget {
			f.FromExact, f.FromLow = false, kb*capStep
			break
		}
		mid := kb + (kt-kb)/2
		if try(mid*capStep).OOMs == 0 {
			kt = mid
		} else {
			kb = max(mid, bottom/capStep)
		}
	}
	top = min(kt*capStep, top)
	f.From = top
	return f
}
