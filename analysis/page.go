package analysis

import (
	"slices"
	"sync"

	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/analyze/timeline"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// The HTML report's analyses of one device read its replay and nothing
// else, so they run side by side (on a second core where there is one);
// the page is then drawn from them (package report/html) in a fixed order.

// PageOptions tunes the analyses of a device for the HTML report.
type PageOptions struct {
	// Top is the number of leak groups and timeline stack groups.
	Top int
	// Buckets and MaxPoints bound the timeline's points
	// (timeline.StackTimelineOptions).
	Buckets, MaxPoints int
	// MaxLiveEntries is the longest trace whose every allocation and
	// segment life the page embeds; a longer one gets the states the
	// File's replay captured (PageStates).
	MaxLiveEntries int
	// Levels are the timeline's multi-resolution index and single
	// allocations (timeline.StackTimelineOptions.Levels).
	Levels timeline.LevelOptions
	// EnvelopePoints, when positive, redraws the timeline of a trace
	// longer than its points with steps (from annotations or a repeating
	// allocation) as the steps' envelope (timeline.StepEnvelope) in at
	// most that many points.
	EnvelopePoints int
}

// PageStates is the Options.States of a File whose devices the HTML
// report draws: a trace of more than maxLive entries gets its exact state
// at maxStates entries spread over it and at its OOMs (and its peak), for
// the page to show where it cannot embed every allocation's life.
func PageStates(maxLive, maxStates int) func(trace []snapshot.TraceEntry) []int {
	return func(trace []snapshot.TraceEntry) []int {
		if len(trace) > maxLive && len(trace) >= 2 {
			return inspectIndices(trace, maxStates)
		}
		return nil
	}
}

// Page is what the HTML report draws of one device with a replayed trace,
// computed from the File's replay of it.
type Page struct {
	// TimeUS are the entries' times (TraceTimes; nil when the trace
	// lacks them), microseconds.
	TimeUS []int64
	// Timeline is the downsampled timeline (nil for a trace of fewer than
	// two entries).
	Timeline *timeline.Timeline
	// WhatIf is the simulation of the candidate settings when the trace
	// has OOMs (nil when it has none or the simulation failed).
	WhatIf *whatif.Result
	// Peak is the allocator state at the peak.
	Peak *replay.State
	// Leaks is leaks.Leaks' report with the options `snapview leaks`
	// uses by default.
	Leaks *leaks.LeakReport
	// Lives are every segment's life, for a trace the page embeds whole
	// (PageOptions.MaxLiveEntries): address, size, first entry, last
	// entry (-1: still live), stream, expandable (1). States are the exact
	// states of a longer one at the entries PageStates gives and at the
	// peak.
	Lives  [][6]int64
	States []*replay.State
	// Err is the first error of the analyses that can fail (the peak
	// state, the leaks, the segment lives); ErrLeaks says it came from the
	// leaks.
	Err      error
	ErrLeaks bool
}

// Page returns the HTML report's analyses of device: nil when device has
// no trace entries, or its replay failed or kept no series (the File's
// Mode must be Full).
func (f *File) Page(device int, opt PageOptions) *Page {
	trace := replay.DeviceTrace(f.Snap, device)
	res, err := f.Replay(device)
	if err != nil || len(trace) == 0 || len(res.Allocated) != len(trace) {
		return nil
	}
	return f.analyze(device, res, trace, opt)
}

// analyze runs the analyses of a device with a replayed trace of at least
// one entry (len(res.Allocated) == len(trace) > 0): the timeline on one
// goroutine, the leaks, the what-if simulation and the peak state on the
// calling one. res.States are the states captured with the replay of a
// trace too long for the page to embed whole (PageStates), the peak's
// among them.
func (f *File) analyze(dev int, res *replay.Result, trace []snapshot.TraceEntry, opt PageOptions) *Page {
	timeUS := TraceTimes(trace)
	a := &Page{TimeUS: timeUS, States: res.States}
	n := len(trace)
	live := n <= opt.MaxLiveEntries
	var wg sync.WaitGroup
	var in timeline.StackTimelineInput
	if n >= 2 {
		wg.Go(func() { a.Timeline, in = stackTimeline(res, trace, timeUS, opt) })
	}
	if n >= 2 && len(res.OOMs) > 0 {
		if w, err := whatif.Analyze(f.Snap, dev, res, whatif.Options{}); err == nil {
			a.WhatIf = w
		}
	}
	var errPeak, errLives error
	if live || n < 2 {
		a.Peak, errPeak = res.StateAt(res.PeakIndex)
	}
	if live && n >= 2 {
		a.Lives, errLives = segmentLives(res, trace)
	}
	opts := leaks.DefaultLeakOptions(res)
	opts.Top = opt.Top
	var errLeaks error
	a.Leaks, errLeaks = leaks.Leaks(f.Snap, res, opts)
	wg.Wait()
	if a.Timeline != nil && a.Leaks != nil && opt.EnvelopePoints > 0 &&
		(a.Leaks.Steps.Source == steps.StepsAnnotation || a.Leaks.Steps.Source == steps.StepsPattern) {
		var st [][2]int
		for _, sl := range a.Leaks.Slices {
			if sl.Step > 0 {
				st = append(st, [2]int{sl.Start, sl.End})
			}
		}
		timeline.StepEnvelope(a.Timeline, in, st, opt.EnvelopePoints)
	}
	if a.Peak == nil {
		// The peak is among the states replayed with the replay.
		if k := slices.IndexFunc(a.States, func(st *replay.State) bool { return st.Index == res.PeakIndex }); k >= 0 {
			a.Peak = a.States[k]
		} else {
			a.Peak, errPeak = res.StateAt(res.PeakIndex)
		}
	}
	// The errors in the order the page is assembled in.
	switch {
	case errPeak != nil:
		a.Err = errPeak
	case errLeaks != nil:
		a.Err, a.ErrLeaks = errLeaks, true
	case errLives != nil:
		a.Err = errLives
	}
	return a
}

// stackTimeline is timeline.StackTimeline of a device's replay, with the
// page's options, and its input.
func stackTimeline(res *replay.Result, trace []snapshot.TraceEntry, timeUS []int64, opt PageOptions) (*timeline.Timeline, timeline.StackTimelineInput) {
	n := len(trace)
	ranges := make([]timeline.LiveRange, len(res.Allocs))
	for i, a := range res.Allocs {
		end := n
		switch {
		case a.FreeRequested >= 0:
			end = a.FreeRequested
		case a.FreeCompleted >= 0:
			end = a.FreeCompleted
		}
		ranges[i] = timeline.LiveRange{Start: a.AllocIndex, End: end, Bytes: a.Size, Stack: a.Stack}
	}
	in := timeline.StackTimelineInput{
		TimeUS: timeUS, Allocated: res.Allocated, Active: res.Active, Reserved: res.Reserved,
		Ranges: ranges, Peak: res.PeakIndex, Keep: res.OOMs,
	}
	return timeline.StackTimeline(in, timeline.StackTimelineOptions{Groups: opt.Top, Buckets: opt.Buckets, MaxPoints: opt.MaxPoints, Levels: opt.Levels}), in
}

// inspectIndices are the entries whose exact state the page embeds for a
// trace too long to embed whole, besides the peak: maxStates entries
// evenly spread over the trace (the page shows the state nearest by entry
// to a click), and the OOMs; ascending, without duplicates.
func inspectIndices(trace []snapshot.TraceEntry, maxStates int) []int {
	n := len(trace)
	idx := []int{}
	k := min(maxStates, n)
	for j := range k {
		idx = append(idx, int(int64(j)*int64(n-1)/int64(max(k-1, 1))))
	}
	for i := range trace {
		if trace[i].Action == snapshot.ActionOOM {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	return slices.Compact(idx)
}

// segmentLives returns every segment's life on one device: the
// segments before the first entry (from the replay's seeded state), then
// one per segment_alloc or segment_map entry, each closed by the
// segment_free or segment_unmap entry that releases its address.
func segmentLives(res *replay.Result, trace []snapshot.TraceEntry) ([][6]int64, error) {
	st, err := res.StateAt(-1)
	if err != nil {
		return nil, err
	}
	out := [][6]int64{}
	var open []int // indexes in out still live
	add := func(addr, size int64, start int, stream uint64, expandable bool) {
		x := int64(0)
		if expandable {
			x = 1
		}
		out = append(out, [6]int64{addr, size, int64(start), -1, int64(stream), x})
		open = append(open, len(out)-1)
	}
	for _, sg := range st.Segments {
		add(int64(sg.Addr), sg.Size, -1, sg.Stream, sg.Expandable)
	}
	for i := range trace {
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			add(int64(e.Addr), e.Size, i, e.Stream, e.Action == snapshot.ActionSegmentMap)
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			// Close every live range the released one overlaps; what an
			// unmap leaves of a range lives on as new ranges.
			lo, hi := int64(e.Addr), int64(e.Addr)+max(e.Size, 1)
			kept := open[:0:0]
			var rest [][4]int64
			for _, k := range open {
				a, b := out[k][0], out[k][0]+out[k][1]
				if b <= lo || a >= hi {
					kept = append(kept, k)
					continue
				}
				out[k][3] = int64(i)
				if a < lo {
					rest = append(rest, [4]int64{a, lo - a, out[k][4], out[k][5]})
				}
				if b > hi {
					rest = append(rest, [4]int64{hi, b - hi, out[k][4], out[k][5]})
				}
			}
			open = kept
			for _, r := range rest {
				add(r[0], r[1], i, uint64(r[2]), r[3] == 1)
			}
		}
	}
	return out, nil
}

// TraceTimes returns each entry's time_us, or nil when some entry has
// none or the times go backwards.
func TraceTimes(trace []snapshot.TraceEntry) []int64 {
	for i := range trace {
		if trace[i].Flags&snapshot.FlagTime == 0 || (i > 0 && trace[i].TimeUS < trace[i-1].TimeUS) {
			return nil
		}
	}
	timeUS := make([]int64, len(trace))
	for i := range trace {
		timeUS[i] = trace[i].TimeUS
	}
	return timeUS
}
