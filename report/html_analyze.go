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
	// (HTMLOptions.MaxLiveEntries); states the exact states at the drawn
	// points, the peak and the OOMs of a longer one.
	lives  [][5]int64
	states []*analyze.State
	// err is the first error of the analyses that can fail (the peak
	// state, the leaks, the states); errLeaks says it came from the leaks.
	err      error
	errLeaks bool
}

// analyzeDevice runs the analyses of a device with a replayed trace of
// at least one entry (len(res.Allocated) == len(trace) > 0): the
// inspection states of a long trace (a pass over it) on one goroutine, the
// timeline, the leaks, the what-if simulation and the peak state on the
// calling one.
func (b *htmlBuilder) analyzeDevice(dev int, res *analyze.Result, trace []snapshot.TraceEntry, timeUS []int64) *deviceAnalysis {
	a := &deviceAnalysis{timeUS: timeUS}
	n := len(trace)
	live := n <= b.opt.MaxLiveEntries
	var errStates error
	var wg sync.WaitGroup
	if !live && n >= 2 {
		// The one long pass; the rest runs meanwhile.
		wg.Go(func() {
			a.states, errStates = res.StatesAt(inspectIndices(res, n, b.opt.MaxStates))
		})
	}
	if n >= 2 {
		a.timeline = b.stackTimeline(res, trace, timeUS)
	}
	if n >= 2 && len(res.OOMs) > 0 {
		if w, err := whatif.Analyze(b.s, dev, res, whatif.Options{}); err == nil {
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

	if a.peak == nil && errStates == nil {
		// The peak is among the precomputed states.
		k := slices.IndexFunc(a.states, func(st *analyze.State) bool { return st.Index == res.PeakIndex })
		if k >= 0 {
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
	case errStates != nil:
		a.err = errStates
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
// trace of n entries too long to embed whole: maxStates entries evenly
// spread over the trace (the page shows the state nearest by entry to a
// click), plus the peak and the OOMs; ascending, without duplicates.
func inspectIndices(res *analyze.Result, n, maxStates int) []int {
	idx := []int{}
	k := min(maxStates, n)
	for j := range k {
		idx = append(idx, int(int64(j)*int64(n-1)/int64(max(k-1, 1))))
	}
	idx = append(idx, res.PeakIndex)
	idx = append(idx, res.OOMs...)
	idx = slices.DeleteFunc(idx, func(i int) bool { return i < 0 || i >= n })
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
	done    []chan struct{}
}

// startReplays starts the replays of devices.
func startReplays(s *snapshot.Snapshot, devices []int) *replays {
	r := &replays{devices: devices, k: make(map[int]int, len(devices)),
		out: make([]analyze.DeviceReplay, len(devices)), done: make([]chan struct{}, len(devices))}
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
				res, err := analyze.Replay(s, devices[k])
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
func (b *htmlBuilder) analyzeReplay(dev int, replay analyze.DeviceReplay) *deviceAnalysis {
	var trace []snapshot.TraceEntry
	if dev < len(b.s.Traces) {
		trace = b.s.Traces[dev]
	}
	res := replay.Result
	if replay.Err != nil || len(trace) == 0 || len(res.Allocated) != len(trace) {
		return nil
	}
	return b.analyzeDevice(dev, res, trace, htmlTraceTimes(trace))
}
