package report

import (
	"runtime"
	"slices"
	"sync"

	"github.com/snapview/snapview/analyze"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// The report's analyses of one device read its replay and nothing else, so
// they run side by side (on a second core where there is one) before the
// page is assembled in a fixed order: the stack table's numbering and so
// the page stay the same byte for byte.

// deviceAnalysis is what the report computes from one device's replay
// before it assembles the device's part of the page.
type deviceAnalysis struct {
	// timeUS are the entries' times (htmlTraceTimes).
	timeUS []int64
	// timeline is the downsampled timeline (nil for a trace of fewer than
	// two entries).
	timeline *analyze.Timeline
	// whatif is the simulation of the candidate settings when the trace
	// has OOMs (nil when it has none or the simulation failed).
	whatif *whatif.Result
	// peak is the allocator state at the peak.
	peak *analyze.State
	// leaks is analyze.Leaks' report with the options `snapview leaks`
	// uses by default.
	leaks *analyze.LeakReport
	// lives are every segment's life, for a trace the page embeds whole
	// (HTMLOptions.MaxLiveEntries); states the exact states of a longer
	// one at the entries inspectIndices gives and at the peak.
	lives  [][6]int64
	states []*analyze.State
	// err is the first error of the analyses that can fail (the peak
	// state, the leaks, the segment lives); errLeaks says it came from the
	// leaks.
	err      error
	errLeaks bool
}

// analyzeDevice runs the analyses of a device with a replayed trace of
// at least one entry (len(res.Allocated) == len(trace) > 0): the timeline
// on one goroutine, the leaks, the what-if simulation and the peak state
// on the calling one. states are the inspection states replayed with a
// trace too long for the page to embed whole (startReplays), the peak's
// among them.
func (b *htmlBuilder) analyzeDevice(dev int, res *analyze.Result, states []*analyze.State, trace []snapshot.TraceEntry, timeUS []int64) *deviceAnalysis {
	a := &deviceAnalysis{timeUS: timeUS, states: states}
	n := len(trace)
	live := n <= b.opt.MaxLiveEntries
	var wg sync.WaitGroup
	if n >= 2 {
		wg.Go(func() { a.timeline = b.stackTimeline(res, trace, timeUS) })
	}
	if n >= 2 && len(res.OOMs) > 0 {
		if _, w, err := whatif.OOMVerdict(b.s, dev, res, nil); err == nil {
			a.whatif = w
		}
	}
	var errPeak, errLives error
	if live || n < 2 {
		a.peak, errPeak = res.StateAt(res.PeakIndex)
	}
	if live && n >= 2 {
		a.lives, errLives = htmlSegmentLives(res, trace)
	}
	opts := analyze.DefaultLeakOptions(res)
	opts.Top = b.opt.Top
	var errLeaks error
	a.leaks, errLeaks = analyze.Leaks(b.s, res, opts)
	wg.Wait()
	if a.peak == nil {
		// The peak is among the states replayed with the replay.
		if k := slices.IndexFunc(a.states, func(st *analyze.State) bool { return st.Index == res.PeakIndex }); k >= 0 {
			a.peak = a.states[k]
		} else {
			a.peak, errPeak = res.StateAt(res.PeakIndex)
		}
	}
	// The errors in the order the page is assembled in.
	switch {
	case errPeak != nil:
		a.err = errPeak
	case errLeaks != nil:
		a.err, a.errLeaks = errLeaks, true
	case errLives != nil:
		a.err = errLives
	}
	return a
}

// stackTimeline is analyze.StackTimeline of a device's replay, with the
// report's options.
func (b *htmlBuilder) stackTimeline(res *analyze.Result, trace []snapshot.TraceEntry, timeUS []int64) *analyze.Timeline {
	n := len(trace)
	ranges := make([]analyze.LiveRange, len(res.Allocs))
	for i, a := range res.Allocs {
		end := n
		switch {
		case a.FreeRequested >= 0:
			end = a.FreeRequested
		case a.FreeCompleted >= 0:
			end = a.FreeCompleted
		}
		ranges[i] = analyze.LiveRange{Start: a.AllocIndex, End: end, Bytes: a.Size, Stack: a.Stack}
	}
	return analyze.StackTimeline(analyze.StackTimelineInput{
		TimeUS: timeUS, Allocated: res.Allocated, Active: res.Active, Reserved: res.Reserved,
		Ranges: ranges, Peak: res.PeakIndex, Keep: res.OOMs,
	}, analyze.StackTimelineOptions{Groups: b.opt.Top, Buckets: b.opt.Buckets, MaxPoints: b.opt.MaxPoints})
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

// replays are the replays of a report's devices (analyze.Replay), run
// side by side on up to GOMAXPROCS goroutines: get waits for one, so the
// parts of the report that need a device's replay start as soon as it is
// done and the rest runs meanwhile.
type replays struct {
	devices []int
	k       map[int]int // device -> index in devices
	out     []analyze.DeviceReplay
	// states are the inspection states of a device whose trace is too
	// long for the page to embed whole (inspectIndices and the peak),
	// replayed beside its replay (analyze.ReplayWith).
	states [][]*analyze.State
	done   []chan struct{}
}

// startReplays starts the replays of devices; a device with a trace of
// more than maxLive entries gets its inspection states too, maxStates of
// them spread over it, its OOMs and its peak.
func startReplays(s *snapshot.Snapshot, devices []int, maxLive, maxStates int) *replays {
	r := &replays{devices: devices, k: make(map[int]int, len(devices)),
		out: make([]analyze.DeviceReplay, len(devices)), states: make([][]*analyze.State, len(devices)),
		done: make([]chan struct{}, len(devices))}
	for k, dev := range devices {
		r.k[dev] = k
		r.done[k] = make(chan struct{})
	}
	work := make(chan int, len(devices))
	for k := range devices {
		work <- k
	}
	close(work)
	for range min(runtime.GOMAXPROCS(0), len(devices)) {
		go func() {
			for k := range work {
				var res *analyze.Result
				var err error
				if trace := deviceTrace(s, devices[k]); len(trace) > maxLive && len(trace) >= 2 {
					res, r.states[k], err = analyze.ReplayWith(s, devices[k], analyze.ReplayOptions{States: inspectIndices(trace, maxStates), PeakState: true})
				} else {
					res, err = analyze.Replay(s, devices[k])
				}
				r.out[k] = analyze.DeviceReplay{Result: res, Err: err}
				close(r.done[k])
			}
		}()
	}
	return r
}

// get returns the replay of device, waiting for it; ok is false for a
// device the report does not replay.
func (r *replays) get(device int) (analyze.DeviceReplay, bool) {
	k, ok := r.k[device]
	if !ok {
		return analyze.DeviceReplay{}, false
	}
	<-r.done[k]
	return r.out[k], true
}

// statesOf returns the inspection states replayed with device's replay,
// after get.
func (r *replays) statesOf(device int) []*analyze.State {
	if k, ok := r.k[device]; ok {
		return r.states[k]
	}
	return nil
}

// all waits for every replay and returns them by device.
func (r *replays) all() map[int]analyze.DeviceReplay {
	m := make(map[int]analyze.DeviceReplay, len(r.devices))
	for _, dev := range r.devices {
		m[dev], _ = r.get(dev)
	}
	return m
}

// analyzeReplay is analyzeDevice for a device that has a replayed trace
// (the timeline and the rest of the page need one); nil otherwise.
func (b *htmlBuilder) analyzeReplay(dev int, replay analyze.DeviceReplay, states []*analyze.State) *deviceAnalysis {
	trace := deviceTrace(b.s, dev)
	res := replay.Result
	if replay.Err != nil || len(trace) == 0 || len(res.Allocated) != len(trace) {
		return nil
	}
	return b.analyzeDevice(dev, res, states, trace, htmlTraceTimes(trace))
}
