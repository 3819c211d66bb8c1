package traceview

import (
	"cmp"
	"errors"
	"regexp"
	"slices"
	"strings"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// TraceOptions are what `trace` lists of a file: the range (From and To,
// nil for the first and the last entry; FromFlag and ToFlag name them in
// errors, FromArg and ToArg as they were typed), the address and focus
// filters, and the traces: Device (when DeviceSet) one device's, Host the
// pinned host allocator's alone.
type TraceOptions struct {
	From, To         *steps.Moment
	FromFlag, ToFlag string
	FromArg, ToArg   string
	Addr             snapshot.Addr
	HasAddr          bool
	Focus            *regexp.Regexp
	Device           int
	DeviceSet        bool
	Host             bool
}

// TraceDevices returns the devices whose traces `trace` lists: o.Device's
// when set, none with o.Host, else every device with entries but those
// the allocator was never used on (another rank's, in a distributed
// process's file). Errors are *analysis.UsageError: a device without
// entries, a host trace the file does not have.
func TraceDevices(s *snapshot.Snapshot, o TraceOptions) ([]int, error) {
	switch {
	case o.Host:
		if len(s.HostTraces) == 0 {
			return nil, analysis.UsageErrorf("--host: the file has no host_traces entries (pinned host memory is recorded with _record_memory_history(record_pinned_host_memory=True), PyTorch after 2.11)")
		}
		return nil, nil
	case o.DeviceSet:
		if o.Device >= len(s.Traces) || len(s.Traces[o.Device]) == 0 {
			return nil, analysis.UsageErrorf("device %d has no trace entries%s", o.Device, TracedHint(s))
		}
		return []int{o.Device}, nil
	}
	var devs []int
	idle := s.IdleDevices()
	for d := range s.Traces {
		if len(s.Traces[d]) > 0 && !slices.Contains(idle, d) {
			devs = append(devs, d)
		}
	}
	return devs, nil
}

// TracedHint names the devices that have a trace, for an error about one
// that has none: "; devices with one: 0, 1".
func TracedHint(s *snapshot.Snapshot) string {
	var with []int
	for d := range s.Traces {
		if len(s.Traces[d]) > 0 {
			with = append(with, d)
		}
	}
	if len(with) == 0 {
		return "; no device has one"
	}
	return "; devices with one: " + units.IntList(with)
}

// NewTrace returns what `trace` lists of the devices devs (TraceDevices',
// as many as the command shows) under o: each device's range resolved on
// its replay, then the host trace (host_traces) when o.Host, when no
// device has a trace (a file of pinned host memory only), or when the
// whole of every trace is listed (no From or To: a range names a moment
// of one trace). None means nothing to list. Errors: a moment a device
// lacks or that does not apply, and From after To, are
// *analysis.UsageError; replay errors are returned as they are.
func NewTrace(an *analysis.File, devs []int, o TraceOptions) ([]TraceDevice, error) {
	var tds []TraceDevice
	for _, d := range devs {
		f, err := deviceFilter(an, d, o)
		if err != nil {
			return nil, err
		}
		tds = append(tds, TraceDevice{Device: d, Filter: f})
	}
	s := an.Snap
	if len(s.HostTraces) > 0 && (o.Host || len(devs) == 0 || (o.From == nil && o.To == nil && !o.DeviceSet)) {
		f, err := hostFilter(s.HostTraces, o)
		if err != nil {
			return nil, err
		}
		tds = append(tds, TraceDevice{Device: -1, Host: true, Filter: f})
	}
	return tds, nil
}

// filterOf is o's address and focus filter over the range from to to.
func filterOf(o TraceOptions, from, to int) TraceFilter {
	return TraceFilter{From: from, To: to, Addr: o.Addr, HasAddr: o.HasAddr, Focus: o.Focus}
}

// deviceFilter resolves o's range on device d's replay.
func deviceFilter(an *analysis.File, d int, o TraceOptions) (TraceFilter, error) {
	f := filterOf(o, 0, -1)
	if o.From == nil && o.To == nil {
		return f, nil
	}
	s := an.Snap
	r, err := an.Replay(d)
	if err != nil {
		return f, err
	}
	from, to := -1, len(s.Traces[d])-1 // the states the range runs between
	if o.From != nil {
		i, err := o.From.Resolve(s, r)
		if err != nil {
			return f, traceMomentErr(s, d, *o.From, err, o.FromFlag)
		}
		from = i
		// The listing starts at the first entry at or after the moment
		// (for time:T, the first entry at T or later).
		if f.From, err = o.From.ResolveFirst(s, r); err != nil {
			return f, traceMomentErr(s, d, *o.From, err, o.FromFlag)
		}
	}
	if o.To != nil {
		i, err := o.To.Resolve(s, r)
		if err != nil {
			return f, traceMomentErr(s, d, *o.To, err, o.ToFlag)
		}
		to = i
		f.To = i
		if i < 0 {
			f.From, f.To = 1, 0 // before the first entry: nothing
		}
	}
	if from > to {
		return f, analysis.UsageErrorf("%s %s comes after %s %s on device %d (entry %d after entry %d)", o.FromFlag, o.FromArg, o.ToFlag, o.ToArg, d, from, to)
	}
	return f, nil
}

// traceMomentErr is err, an error of resolving m on device d, as trace
// returns it: the message names flag where Resolve's names --at; a
// moment the device lacks or that does not apply is an
// *analysis.UsageError.
func traceMomentErr(s *snapshot.Snapshot, d int, m steps.Moment, err error, flag string) error {
	err = analysis.MomentErr(s, d, m, err)
	msg := strings.ReplaceAll(err.Error(), "--at", flag)
	var (
		a  *analysis.AbsentError
		me *steps.MomentError
	)
	if errors.As(err, &a) || errors.As(err, &me) {
		return analysis.UsageErrorf("%s", msg)
	}
	return errors.New(msg)
}

// hostFilter resolves o's range on the host trace, which has no replay
// moments of its own: entry:N, time:T and end apply to it; peak, oom and
// step name moments of a device's trace.
func hostFilter(trace []snapshot.TraceEntry, o TraceOptions) (TraceFilter, error) {
	f := filterOf(o, 0, -1)
	from, to := -1, len(trace)-1
	if o.From != nil {
		i, first, err := hostMoment(trace, *o.From, o.FromFlag)
		if err != nil {
			return f, err
		}
		from, f.From = i, first
	}
	if o.To != nil {
		i, _, err := hostMoment(trace, *o.To, o.ToFlag)
		if err != nil {
			return f, err
		}
		to, f.To = i, i
		if i < 0 {
			f.From, f.To = 1, 0
		}
	}
	if from > to {
		return f, analysis.UsageErrorf("%s %s comes after %s %s in the host trace (entry %d after entry %d)", o.FromFlag, o.FromArg, o.ToFlag, o.ToArg, from, to)
	}
	return f, nil
}

// hostMoment resolves m on the host trace: the entry after which it falls
// (-1 before the first) and the first entry at or after it (as
// steps.Moment.Resolve and ResolveFirst do on a device's trace).
func hostMoment(trace []snapshot.TraceEntry, m steps.Moment, flag string) (at, first int, err error) {
	n := len(trace)
	switch m.Kind {
	case steps.MomentEnd:
		return n - 1, max(n-1, 0), nil
	case steps.MomentEntry:
		if m.N >= n {
			return 0, 0, analysis.UsageErrorf("%s entry:%d: the host trace has %s (0 to %d)", flag, m.N, units.Count(n, "trace entry", "trace entries"), n-1)
		}
		return m.N, max(m.N, 0), nil
	case steps.MomentTime:
		if trace[0].Flags&snapshot.FlagTime == 0 {
			return 0, 0, analysis.UsageErrorf("%s %s: the host trace has no timestamps: use entry:N", flag, m)
		}
		us := m.TimeIn(trace)
		byTime := func(e snapshot.TraceEntry, t int64) int { return cmp.Compare(e.TimeUS, t) }
		first, _ = slices.BinarySearchFunc(trace, us, byTime)
		after, _ := slices.BinarySearchFunc(trace, us+1, byTime)
		return after - 1, first, nil // the last entry at or before T
	}
	return 0, 0, analysis.UsageErrorf("%s %s: the host trace has no such moment (peak, oom and step are moments of a device's replay): use entry:N, time:T or end", flag, m)
}

// NothingToTrace is the line `trace` prints when no trace has entries.
const NothingToTrace = "no trace entries: the file was recorded without history (torch.cuda.memory._record_memory_history was off) or holds a bare segment list"
