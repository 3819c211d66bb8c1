package replay

import "github.com/snapview/snapview/analyze/stats"

// passCapture is what a recording replay takes as it passes the entries
// (Options): the states at the entries asked for, and a copy of the
// replayed state from at most every entries before the highest allocated
// bytes so far, so that the state at the peak costs a replay of at most
// every entries once the pass is done (PeakState).
type passCapture struct {
	// states are the entries whose states the pass takes (ascending);
	// peak says to keep the copies.
	states []int
	peak   bool
	every  int
	// cur is the copy taken before entry curAt, the start of the current
	// stretch of every entries (-1: none, the state was too big to copy or
	// cur is held's old buffer); held the copy before heldAt, the start of
	// the stretch of the highest allocated bytes so far. curN and heldN are
	// the runner's nallocs then.
	cur, held     machine
	curAt, heldAt int
	curN, heldN   int32
	// best is the highest allocated bytes so far, first reached after
	// entry bestAt (Result.PeakIndex at the end).
	best   int64
	bestAt int
}

// checkpointStretches is about how many copies a replay takes.
const checkpointStretches = 64

// newPassCapture returns what a replay of a trace of n entries keeps
// for opt: the states at opt.States, and copies every opt.every entries
// (0: about n/checkpointStretches, at least 1024) for opt.PeakState.
func newPassCapture(n int, opt *Options) *passCapture {
	every := opt.every
	if every <= 0 {
		every = max(n/checkpointStretches, 1024)
	}
	return &passCapture{states: opt.States, peak: opt.PeakState, every: every, curAt: -1, heldAt: -1, bestAt: -1}
}

// runCapturing is runTo(len(trace)-1) that returns the states after the
// entries ck.states (as machineState, with the pools runTo sets at the
// end, without setting them on the way) and keeps ck's copies.
func (x *runner) runCapturing(ck *passCapture) []*State {
	m, want := x.m, ck.states
	out := make([]*State, 0, len(want)+1)
	for len(want) > 0 && want[0] < 0 {
		out = append(out, x.r.machineState(m, want[0], x.fileSeg))
		want = want[1:]
	}
	for i := range x.trace {
		if ck.peak && i%ck.every == 0 {
			ck.curAt = -1
			// A copy costs a few nanoseconds an element, a replayed entry
			// about a hundred: copy a state of up to 8 elements an entry.
			if m.footprint() <= 8*ck.every {
				ck.cur.copyFrom(m)
				ck.curAt, ck.curN = i, x.nallocs
			}
		}
		x.step(i)
		if v := m.st.AllocatedBytes[stats.PoolAll].Current; ck.peak && (ck.bestAt < 0 || v > ck.best) {
			ck.best, ck.bestAt = v, i
			if ck.curAt >= 0 && ck.curAt != ck.heldAt {
				ck.cur, ck.held = ck.held, ck.cur
				ck.heldAt, ck.heldN = ck.curAt, ck.curN
				ck.curAt = -1
			}
		}
		for len(want) > 0 && want[0] == i {
			out = append(out, x.r.machineState(m, i, x.fileSeg))
			want = want[1:]
		}
	}
	x.runTo(-1) // no entries; sets the pools of the file's segments
	return out
}

// peakState returns the state after r.PeakIndex, from ck's copy when it
// has one before the peak (x is the recording runner, done), else from a
// replay from the seed.
func (r *Result) peakState(x *runner, ck *passCapture) *State {
	peak := r.PeakIndex
	if ck == nil || ck.heldAt < 0 || ck.bestAt != peak || ck.heldAt > peak {
		st, _ := r.StateAt(peak) // peak is in range
		return st
	}
	y := &runner{r: r, m: &ck.held, trace: x.trace, fileSeg: x.fileSeg, nallocs: ck.heldN}
	for i := ck.heldAt; i <= peak; i++ {
		y.step(i)
	}
	y.runTo(-1)
	return r.stateOf(y, peak)
}
