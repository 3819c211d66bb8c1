// Package analysis is the per-file analysis handle: one decoded snapshot,
// each of its devices replayed at most once (package analyze/replay), and
// every view a query on it: the memory_stats() figures with their trust
// (Stats), the trace's coverage, `info`'s description (Info), leaks, the
// states at moments, the timeline, the what-if inputs and the sides that
// `diff` and `ranks` compare.
//
// A File replays a device the first time a view asks for it; views of one
// device share that replay, and views may run on several goroutines at
// once (a device's replay runs once, the others wait for it). ReplayAll
// and Start replay several devices side by side. How much of each replay
// is kept (Options.Mode) is chosen once per File, by the command that
// knows which views it will ask for: the figures at the end only
// (`summary`, `info`), the peaks (`diff`, `ranks`), or the series and
// allocations (`leaks`, `report`, ...).
//
// The package never prints. The views of several files (Ranks, Diff,
// Forecast) read them only through the Open they are given; Ranks and
// OneStepFiles look at the paths and directories named (compare.RankFiles).
package analysis

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// Options says how a File replays its devices.
type Options struct {
	// Mode says how much of each replay is kept (the zero Mode: all of
	// it, replay.Full).
	Mode replay.Mode
	// States, when set, gives for a device's trace the entries whose
	// allocator state its replay captures in its one pass, with the
	// peak's (replay.Options.States and PeakState; Full mode only). nil
	// from States: none for that device.
	States func(trace []snapshot.TraceEntry) []int
}

// File is the analysis of one decoded snapshot. Its methods are safe for
// concurrent use. The File keeps Snap, which must not change while the
// File is in use.
type File struct {
	// Snap is the decoded snapshot.
	Snap *snapshot.Snapshot

	opt  Options
	mu   sync.Mutex
	devs map[int]*deviceReplay

	twinsOnce sync.Once
	twins     []int32 // replay.Twins of Snap

	hostOnce sync.Once
	host     info.HostMemory // info.Host of Snap
}

// deviceReplay is the one replay of one device.
type deviceReplay struct {
	once sync.Once
	done atomic.Bool // once has run
	res  *replay.Result
	err  error
}

// New returns the analysis of s. It replays nothing until a view asks.
func New(s *snapshot.Snapshot, opt Options) *File {
	return &File{Snap: s, opt: opt, devs: map[int]*deviceReplay{}}
}

// Replay returns the replay of device (replay.Run with the File's
// Options), replaying it on the first call; later and concurrent calls
// get the same Result and error. The error is replay.Run's: a negative
// device, or one the file holds nothing for.
//
// A device whose trace entries and segments are those of an earlier one
// (replay.Twins) is not replayed: it gets a copy of that one's replay,
// named for it.
func (f *File) Replay(device int) (*replay.Result, error) {
	if t := f.twin(device); t != device {
		if r, err := f.Replay(t); err == nil {
			return r.Twin(device), nil
		}
	}
	f.mu.Lock()
	d := f.devs[device]
	if d == nil {
		d = &deviceReplay{}
		f.devs[device] = d
	}
	f.mu.Unlock()
	d.once.Do(func() {
		d.res, d.err = f.run(device)
		d.done.Store(true)
	})
	return d.res, d.err
}

// twin returns the first device whose trace entries and segments are
// those of device (replay.Twins), device itself when there is none.
func (f *File) twin(device int) int {
	f.twinsOnce.Do(func() { f.twins = replay.Twins(f.Snap) })
	if device < 0 || device >= len(f.twins) {
		return device
	}
	return int(f.twins[device])
}

// Twins returns, for each device of the file that has the same trace
// entries and segments as an earlier one, that device (see
// replay.Twins): such a device's replay is a copy of the earlier one's.
// It is nil when every device is its own.
func (f *File) Twins() map[int]int {
	f.twin(0)
	var out map[int]int
	for d, t := range f.twins {
		if int(t) != d {
			if out == nil {
				out = map[int]int{}
			}
			out[d] = int(t)
		}
	}
	return out
}

// run replays device with the File's options.
func (f *File) run(device int) (*replay.Result, error) {
	opt := replay.Options{Mode: f.opt.Mode}
	if f.opt.States != nil {
		if opt.States = f.opt.States(replay.DeviceTrace(f.Snap, device)); opt.States != nil {
			opt.PeakState = true
		}
	}
	return replay.Run(f.Snap, device, opt)
}

// Forget drops the File's replay of device, for a caller that has done
// with it and visits many devices: a file of 10^5 devices is then not
// held in memory replay by replay. A later view replays the device again;
// views waiting for the replay still get it.
func (f *File) Forget(device int) {
	f.mu.Lock()
	delete(f.devs, device)
	f.mu.Unlock()
}

// begun reports whether the File has a replay of device, done or running.
func (f *File) begun(device int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.devs[device] != nil
}

// replayed returns the replay of device when it is done, without
// replaying or waiting; ok is false otherwise.
func (f *File) replayed(device int) (r *replay.Result, err error, ok bool) {
	f.mu.Lock()
	d := f.devs[device]
	f.mu.Unlock()
	if d == nil || !d.done.Load() {
		return nil, nil, false
	}
	return d.res, d.err, true
}

// Start replays devices side by side, on up to GOMAXPROCS goroutines, and
// returns at once: the views that need a device's replay wait for it
// (Replay), the others run meanwhile.
func (f *File) Start(devices []int) {
	work := make(chan int, len(devices))
	for _, d := range devices {
		work <- d
	}
	close(work)
	for range min(runtime.GOMAXPROCS(0), len(devices)) {
		go func() {
			for d := range work {
				f.Replay(d) // the result stays in f
			}
		}()
	}
}

// ReplayAll replays devices side by side, on up to GOMAXPROCS goroutines,
// and returns when every one is done.
func (f *File) ReplayAll(devices []int) {
	f.Start(devices)
	for _, d := range devices {
		f.Replay(d) // waits for the replay Start began
	}
}

// HasTrace reports whether device has trace entries.
func (f *File) HasTrace(device int) bool {
	return len(replay.DeviceTrace(f.Snap, device)) > 0
}

// Info is what `snapview info` says about the file, describing in Devices
// the devices of only (every device when only is nil). The end-state
// check and seeding of each device come from the File's replay of it when
// one was begun (Start, ReplayAll, another view), waiting for it: Info
// reads the file while the replays Start began run. A device without one
// is replayed for Info alone and the replay is not kept, so that `info` on
// a file of 10^5 devices does not hold them all. Its Host is f.Host's.
func (f *File) Info(only []int) *info.Info {
	return info.InspectHost(f.Snap, func(device int) (*replay.Result, error) {
		if t := f.twin(device); f.begun(device) || t != device || f.begun(t) {
			// A twin's replay is a copy of the first device's, kept.
			return f.Replay(device)
		}
		return f.run(device)
	}, only, f.Host())
}

// Host is the file's pinned host memory (info.Host: its host segments,
// and host_traces replayed under the caching host allocator's rules),
// computed on the first call; every view (summary, state, leaks, the
// report) shows these same figures. Callers must not change it.
func (f *File) Host() *info.HostMemory {
	f.hostOnce.Do(func() { f.host = info.Host(f.Snap) })
	return &f.host
}

// HasHost says whether the file holds pinned host memory (host_traces or
// host_segments entries), without replaying it.
func (f *File) HasHost() bool {
	return len(f.Snap.HostTraces) > 0 || len(f.Snap.HostSegments) > 0
}

// DeviceInfos are the Devices of [File.Info] with their coverage, for
// every device with segments or trace entries, as the summary shows them:
// seeded[device] says whether the figures shown for device come from a
// seeded replay, and the coverage comes from the replays the File has
// made so far, or a pass over the trace of any other device. Nothing is
// replayed or waited for, and Replayed is false.
func (f *File) DeviceInfos(seeded map[int]bool) []info.DeviceInfo {
	return info.InspectCoverage(f.Snap, func(d int) (bool, *replay.Coverage) {
		c := f.TraceCoverage(d)
		return seeded[d], &c
	})
}

// TraceCoverage returns how the trace of device covers the run: from the
// File's replay of it when that is done, else from a pass over the trace
// (replay.TraceCoverage). Nothing is replayed or waited for.
func (f *File) TraceCoverage(device int) replay.Coverage {
	t := f.twin(device)
	if r, err, ok := f.replayed(t); ok && err == nil && f.HasTrace(t) {
		c := r.Coverage
		c.Device = device
		return c
	}
	return replay.TraceCoverage(f.Snap, device)
}
