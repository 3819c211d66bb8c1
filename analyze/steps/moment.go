package steps

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// MomentKind is how a [Moment] names a point of a device's trace.
type MomentKind int

const (
	// MomentPeak: the first entry after which allocated bytes are highest.
	MomentPeak MomentKind = iota
	// MomentOOM: the last oom entry, or the N-th (from 1).
	MomentOOM
	// MomentEnd: the last entry (the state the file holds).
	MomentEnd
	// MomentEntry: entry N (from 0; -1 is before the first entry).
	MomentEntry
	// MomentTime: the last entry at or before a time.
	MomentTime
	// MomentStep: the last entry of step N of the steps [Leaks] finds
	// (0: the prologue before the first step; -1: the last step).
	MomentStep
)

// Moment names one point of a device's trace, as `state --at` spells it:
// peak, oom, oom:K, end, entry:N, time:T or step:K. The zero Moment is the
// peak. [Moment.Resolve] turns it into a trace entry index.
type Moment struct {
	Kind MomentKind
	// N is K of oom:K (0: the last oom entry), N of entry:N, K of step:K
	// (-1: the last step).
	N int
	// Dur is time:T given as a duration from the first entry.
	Dur time.Duration
	// US is time:T given as a number of microseconds; Abs says so. A
	// value smaller than the first entry's time_us counts from the first
	// entry, a larger one is a time_us value (microseconds since the Unix
	// epoch).
	US  int64
	Abs bool
}

// String spells m as the --at flag does.
func (m Moment) String() string {
	switch m.Kind {
	case MomentOOM:
		if m.N > 0 {
			return fmt.Sprintf("oom:%d", m.N)
		}
		return "oom"
	case MomentEnd:
		return "end"
	case MomentEntry:
		return fmt.Sprintf("entry:%d", m.N)
	case MomentTime:
		if m.Abs {
			return fmt.Sprintf("time:%d", m.US)
		}
		return "time:" + m.Dur.String()
	case MomentStep:
		if m.N < 0 {
			return "step:last"
		}
		return fmt.Sprintf("step:%d", m.N)
	}
	return "peak"
}

// MomentError is the error of a moment a device's trace does not have.
// Absent is true when the device lacks it (no oom entry, no trace for a
// peak) while another device of the file may have it; false when the
// moment cannot be in any trace like this one (an entry past the end, a
// time without timestamps, a step that was not found).
type MomentError struct {
	Kind   MomentKind
	Device int
	Absent bool
	Msg    string
}

func (e *MomentError) Error() string { return e.Msg }

// Resolve returns the trace entry of s.Traces[r.Device] after which m
// falls: -1 is the state before the first entry. Errors are *MomentError.
// r may come from Full [replay.Run] or, for moments other than peak, oom and step,
// from StatsOnly [replay.Run].
//
// step:K takes the steps [Leaks] finds over the whole trace
// (record_function ranges that repeat once per step, else a regular
// allocation, see [FindSteps]) and returns the last entry of step K; a
// trace cut into equal slices has no steps, and step:K is then an error.
func (m Moment) Resolve(s *snapshot.Snapshot, r *replay.Result) (int, error) {
	trace := replay.DeviceTrace(s, r.Device)
	n := len(trace)
	fail := func(absent bool, format string, args ...any) (int, error) {
		return 0, &MomentError{Kind: m.Kind, Device: r.Device, Absent: absent, Msg: fmt.Sprintf(format, args...)}
	}
	switch m.Kind {
	case MomentPeak:
		if n == 0 {
			return fail(true, "device %d has no trace entries, so no peak: try --at end", r.Device)
		}
		return r.PeakIndex, nil
	case MomentOOM:
		if len(r.OOMs) == 0 {
			return fail(true, "device %d has no oom entry", r.Device)
		}
		if m.N == 0 {
			return r.OOMs[len(r.OOMs)-1], nil
		}
		if m.N > len(r.OOMs) {
			return fail(true, "--at oom:%d: device %d has %s", m.N, r.Device, units.Count(len(r.OOMs), "oom entry", "oom entries"))
		}
		return r.OOMs[m.N-1], nil
	case MomentEnd:
		return n - 1, nil
	case MomentEntry:
		if m.N >= n {
			return fail(false, "--at entry:%d: device %d has %s (0 to %d)", m.N, r.Device, units.Count(n, "trace entry", "trace entries"), n-1)
		}
		return m.N, nil
	case MomentStep:
		if n == 0 {
			return fail(true, "device %d has no trace entries, so no steps: try --at end", r.Device)
		}
		sl, st := FindSteps(s, r, n-1)
		if st.Source == StepsSlices || st.Source == StepsNone {
			return fail(false, "--at %s: no steps found in the trace of device %d (no record_function range repeats once per step, no allocation repeats at a regular interval): use --at entry:N or time:T", m, r.Device)
		}
		if m.N < 0 {
			return sl[len(sl)-1].End, nil
		}
		for _, x := range sl {
			if x.Step == m.N {
				return x.End, nil
			}
		}
		first := 1
		if st.Prologue {
			first = 0
		}
		return fail(false, "--at %s: device %d has steps %d to %d (found from %s)", m, r.Device, first, st.Count, st.describe())
	}
	// MomentTime
	if n == 0 {
		return fail(true, "device %d has no trace entries: try --at end", r.Device)
	}
	if trace[0].Flags&snapshot.FlagTime == 0 {
		return fail(false, "the trace of device %d has no timestamps (PyTorch before 2.2): use --at entry:N", r.Device)
	}
	return r.IndexAtTime(m.timeUS(trace)), nil
}

// TimeIn is the time_us value (microseconds since the Unix epoch) a
// time:T moment names in trace, which has timestamps: for a trace that is
// no device's (the pinned host allocator's host_traces).
func (m Moment) TimeIn(trace []snapshot.TraceEntry) int64 { return m.timeUS(trace) }

// timeUS is the time_us value (microseconds since the Unix epoch) a
// time:T moment names in trace, which has timestamps.
func (m Moment) timeUS(trace []snapshot.TraceEntry) int64 {
	us := m.US
	switch {
	case !m.Abs:
		us = trace[0].TimeUS + m.Dur.Microseconds()
	case us < trace[0].TimeUS:
		// Too small for a time_us value: microseconds from the first entry.
		us += trace[0].TimeUS
	}
	return us
}

// ResolveFirst returns the first trace entry of s.Traces[r.Device] at or
// after m, as a listing that starts at m does (trace --from): for time:T
// the first entry whose time_us is T or later (len(trace) when none is),
// for any other moment the entry Resolve returns (0 for entry:-1). Errors
// are Resolve's.
func (m Moment) ResolveFirst(s *snapshot.Snapshot, r *replay.Result) (int, error) {
	i, err := m.Resolve(s, r)
	if err != nil || m.Kind != MomentTime {
		return max(i, 0), err
	}
	trace := replay.DeviceTrace(s, r.Device)
	j, _ := slices.BinarySearchFunc(trace, m.timeUS(trace), func(e snapshot.TraceEntry, t int64) int { return cmp.Compare(e.TimeUS, t) })
	return j, nil
}

// FindSteps cuts the trace of r's device, entries 0 to at, into the steps
// [Leaks] measures growth over with its default options: a
// record_function range that repeats once per step, else an allocation
// made at a regular interval, else equal slices (Steps.Source says which).
// r must come from Full [replay.Run] (the pattern needs r.Allocs).
func FindSteps(s *snapshot.Snapshot, r *replay.Result, at int) ([]LeakSlice, Steps) {
	return LeakSlices(s, r, replay.DeviceTrace(s, r.Device), at, StepsAuto, 0)
}

// StepOf returns the step (or slice) of sl holding entry i, -1 when none
// does.
func StepOf(sl []LeakSlice, i int) int {
	for _, x := range sl {
		if x.Start <= i && i <= x.End {
			return x.Step
		}
	}
	return -1
}

// describe says where the steps came from, for messages.
func (st Steps) describe() string {
	switch st.Source {
	case StepsAnnotation:
		return fmt.Sprintf("the record_function range %q", st.Name)
	case StepsPattern:
		return "an allocation repeating once per step"
	}
	return st.Source.String()
}

// FlagError is an error met with the moment of the flag Flag ("--base-at")
// where the moment's own errors name --at: its message names Flag
// instead. Err is the error as it came (a *MomentError, or any other).
type FlagError struct {
	Flag string
	Err  error
}

func (e *FlagError) Error() string { return strings.ReplaceAll(e.Err.Error(), "--at", e.Flag) }
func (e *FlagError) Unwrap() error { return e.Err }
