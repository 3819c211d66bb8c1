package info

import (
	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// Info is what `snapview info` tells about a snapshot file: its layout,
// the PyTorch version it likely came from, what each device holds, how
// the memory history was recorded (as far as the file shows it), and the
// warnings a user should read before trusting the other views. Every
// slice is non-nil, so JSON shows [] rather than null.
type Info struct {
	// Legacy is true for a bare list of segments
	// (torch.cuda.memory_snapshot()); TopLevelKeys are the keys of the
	// top-level dict otherwise, in file order.
	Legacy       bool
	TopLevelKeys []string
	// NumSegments is the number of segments of all devices.
	NumSegments int
	// SegmentsFromTrace is true when the file had no segments and they
	// were rebuilt from the trace (snapshot.Snapshot.SegmentsFromTrace):
	// a replay then ends in them by construction, which checks nothing.
	SegmentsFromTrace bool
	// RecordedDevices is len(device_traces): the number of devices the
	// allocator was initialised for (0 without device_traces).
	RecordedDevices int
	// IdleDevices are the devices device_traces lists that hold neither
	// segments nor trace entries.
	IdleDevices []int

	// Version is the hint at the PyTorch release that wrote the file.
	Version VersionHint

	// Devices describes each device with segments or trace entries, in
	// ordinal order.
	Devices []DeviceInfo

	// Recording is how the memory history was recorded, as inferred.
	Recording Recording

	// Host is the pinned host memory the file holds (Host).
	Host HostMemory

	// Rounding is the allocator's rounding rule inferred from the file's
	// blocks and segment sizes (InferRounding), which the replay follows.
	Rounding allocator.InferredRounding

	// Settings is allocator_settings as display strings, sorted by key;
	// empty when the file has none.
	Settings []snapshot.KeyValue

	// Unknown counts the keys, block states and actions the decoder did
	// not know (newer PyTorch), by path, sorted; they were tolerated.
	Unknown []snapshot.Count

	// Warnings are the decoder's warnings followed by what the inference
	// found worth saying (no history, a wrapped trace, missing stacks and
	// their likely cause, an empty file), one sentence or two each.
	Warnings []string
}

// DeviceInfo is what a snapshot holds for one device.
type DeviceInfo struct {
	Device int
	// Segments and Blocks count what the file holds at dump time;
	// ReservedBytes is the sum of the segments' total_size and
	// AllocatedBytes the sum of the active_allocated blocks, in bytes.
	Segments, Blocks              int
	ReservedBytes, AllocatedBytes int64
	// LiveBlocks counts active blocks (allocated or pending free);
	// LiveBlockStacks those with a stack.
	LiveBlocks, LiveBlockStacks int

	// Entries is the length of the device's trace; FirstUS and LastUS the
	// time_us of its first and last entries with one (microseconds since
	// the Unix epoch, 0 when the entries have none).
	Entries         int
	FirstUS, LastUS int64
	// Actions counts the trace entries per action, in the order PyTorch
	// declares the actions, unknown actions last in order of appearance.
	Actions []snapshot.Count
	// OOMs counts oom entries.
	OOMs int

	// Coverage says whether the trace holds the whole run.
	Coverage TraceCoverageKind
	// OrphanFrees counts addresses freed without an alloc earlier in the
	// trace; UntracedBlocks live blocks whose alloc is not in the trace.
	OrphanFrees, UntracedBlocks int

	// Replayed is true when the allocator replay ran (the device has
	// trace entries); Seeded and Check are its Result.Seeded and
	// Result.Check. ReplayError is set when the replay could not run.
	Replayed    bool
	Seeded      bool
	Check       replay.EndCheck
	ReplayError string
	// Trust is the replay's verdict on the history figures
	// (Result.Stats.Known, see DecideTrust); History Unknown without a
	// replay.
	Trust stats.Known
}

// TraceCoverageKind classifies how much of the run a device's trace
// covers.
type TraceCoverageKind string

const (
	// CoverageNone: the device has no trace entries.
	CoverageNone TraceCoverageKind = "none"
	// CoverageFromStart: every free and every live block has its alloc in
	// the trace; peaks and totals replay exactly.
	CoverageFromStart TraceCoverageKind = "from_start"
	// CoverageWrapped: the trace misses the start, and its length looks
	// like a max_entries setting (a round number, or the same length on
	// every device): the ring buffer most likely wrapped.
	CoverageWrapped TraceCoverageKind = "wrapped"
	// CoverageLate: the trace misses the start and does not look full:
	// recording most likely started after the first allocations (it may
	// still have wrapped at an unround max_entries).
	CoverageLate TraceCoverageKind = "started_late"
	// CoverageStateOnly: at most one entry with stacks on live blocks:
	// enabled='state' (or the pre-2.1 default trace_alloc_max_entries=1),
	// which keeps the most recent event only.
	CoverageStateOnly TraceCoverageKind = "state_only"
	// CoverageWindow: the trace misses the start and the file is a window
	// cut from a bigger snapshot (its blocks lists lack inactive blocks,
	// snapshot.Snapshot.InactiveBlocksMissing): whether recording started
	// late or the ring buffer wrapped is not known.
	CoverageWindow TraceCoverageKind = "window"
)

// Replayed gives the replay of a device for [Inspect]: what
// [replay.Run] returned for it, waiting for it when it is still running.
type Replayed func(device int) (*replay.Result, error)

// Inspect gathers everything `snapview info` shows about s, describing in
// Devices only the devices of only (all of them when only is nil: a report
// that draws a few of 10^5 devices describes those few).
//
// The end-state check and the seeding of each device with trace entries
// come from its replay: replayed(device) (any [replay.Mode]; Inspect reads
// Result.Seeded, Check, Coverage and Stats.Known), or, with a nil replayed,
// a StatsOnly [replay.Run] made here. Everything that does not need a
// device's replay is done before replayed is called for it, so a caller's
// replays can run while Inspect reads the file. replayed is called from
// the goroutine that calls Inspect, once per inspected device with a
// trace.
func Inspect(s *snapshot.Snapshot, replayed Replayed, only []int) *Info {
	return InspectHost(s, replayed, only, nil)
}

// InspectHost is [Inspect] with the file's pinned host memory given
// (Host(s), computed once by a caller that keeps it for other views);
// a nil host is computed here.
func InspectHost(s *snapshot.Snapshot, replayed Replayed, only []int, host *HostMemory) *Info {
	if host == nil {
		h := Host(s)
		host = &h
	}
	in := &Info{
		Legacy:            s.Legacy,
		TopLevelKeys:      append([]string{}, s.TopLevelKeys...),
		NumSegments:       len(s.Segments),
		SegmentsFromTrace: s.SegmentsFromTrace,
		RecordedDevices:   len(s.Traces),
		Rounding:          allocator.InferRounding(s, -1),
		Host:              *host,
		IdleDevices:       []int{},
		Devices:           []DeviceInfo{},
		Settings:          []snapshot.KeyValue{},
		Unknown:           append([]snapshot.Count{}, s.Unknown...),
		Warnings:          append([]string{}, s.Warnings...),
	}
	if s.Settings != nil {
		in.Settings = append(in.Settings, s.Settings.Raw...)
	}
	have := s.Devices()
	haveSet := make(map[int]bool, len(have))
	for _, d := range have {
		haveSet[d] = true
	}
	for d := range s.Traces {
		if !haveSet[d] {
			in.IdleDevices = append(in.IdleDevices, d)
		}
	}
	if only != nil {
		have = only
	}
	in.Version = InferVersion(s)
	sc := scanRecording(s) // before the replays are waited for
	for _, d := range have {
		in.Devices = append(in.Devices, deviceInfo(s, d, nil, replayed))
	}
	in.Recording = classifyCoverageScanned(s, sc, in.Devices)
	in.Warnings = append(in.Warnings, infoWarnings(s, in)...)
	return in
}

// InspectCoverage returns the Devices of [Inspect], with the same
// Coverage, for a caller that has replayed the devices already:
// known(device) gives a device's Result.Seeded (the replay had to seed
// blocks older than the trace) and its Result.Coverage (nil: a pass over
// the trace finds it), in place of the replay Inspect makes; Replayed is
// false.
func InspectCoverage(s *snapshot.Snapshot, known func(device int) (seeded bool, coverage *replay.Coverage)) []DeviceInfo {
	devices := []DeviceInfo{}
	for _, d := range s.Devices() {
		devices = append(devices, deviceInfo(s, d, known, nil))
	}
	ClassifyCoverage(s, devices)
	return devices
}

// ClassifyCoverage infers the recording from s and refines the Coverage
// of each device that misses the start: wrapped or started late (see
// inferRecording), or state only when enabled='state' left it at most
// one entry.
func ClassifyCoverage(s *snapshot.Snapshot, devices []DeviceInfo) Recording {
	return classifyCoverageScanned(s, scanRecording(s), devices)
}

// classifyCoverageScanned is classifyCoverage given inferRecording's pass
// over s.
func classifyCoverageScanned(s *snapshot.Snapshot, sc recordingScan, devices []DeviceInfo) Recording {
	rec := inferRecordingScanned(s, sc, devices)
	for i := range devices {
		if s.InactiveBlocksMissing && (devices[i].Coverage == CoverageWrapped || devices[i].Coverage == CoverageLate) {
			devices[i].Coverage = CoverageWindow
		}
		if rec.Enabled == EnabledState && devices[i].Entries > 0 && devices[i].Entries <= 1 {
			devices[i].Coverage = CoverageStateOnly
		}
	}
	return rec
}

// deviceInfo describes one device. With known, known(device) gives
// Seeded and, when not nil, the device's Coverage (from the caller's
// replay), and nothing is replayed. Without it, the end-state check,
// Seeded and the Coverage come from the replay of the device's trace: the
// one replayed gives, else a StatsOnly [replay.Run] made here.
func deviceInfo(s *snapshot.Snapshot, device int, known func(int) (bool, *replay.Coverage), replayed Replayed) DeviceInfo {
	di := DeviceInfo{Device: device, Check: replay.EndCheck{Differences: []string{}}}
	lo, hi := s.DeviceSegments(device)
	for i := lo; i < hi; i++ {
		seg := &s.Segments[i]
		if seg.Device != device {
			continue
		}
		di.Segments++
		di.Blocks += len(seg.Blocks)
		di.ReservedBytes += seg.TotalSize
		for j := range seg.Blocks {
			if seg.Blocks[j].State == snapshot.StateActiveAllocated {
				di.AllocatedBytes += seg.Blocks[j].Size
			}
		}
	}
	var counts actionTally
	trace := replay.DeviceTrace(s, device)
	for i := range trace {
		counts[trace[i].Action]++
	}
	di.Actions = counts.counts(s)

	// The coverage comes from the replay's first pass when there is one.
	var c *replay.Coverage
	switch {
	case len(trace) == 0:
	case known != nil:
		di.Seeded, c = known(device)
	default:
		if r, err := replayOnce(s, device, replayed); err != nil {
			di.ReplayError = err.Error()
			di.Trust = replay.DecideTrust(s, device, nil, err)
		} else {
			di.Replayed, di.Seeded, di.Check, di.Trust = true, r.Seeded, r.Check, r.Stats.Known
			if di.Check.Differences == nil {
				di.Check.Differences = []string{}
			}
			c = &r.Coverage
		}
	}
	if c == nil {
		tc := replay.TraceCoverage(s, device)
		c = &tc
	}
	di.Entries, di.FirstUS, di.LastUS, di.OOMs = c.Entries, c.FirstUS, c.LastUS, c.OOMs
	di.LiveBlocks, di.LiveBlockStacks = c.LiveBlocks, c.LiveBlockStacks
	di.OrphanFrees, di.UntracedBlocks = c.OrphanFrees, c.UntracedBlocks

	di.Coverage = CoverageNone
	if len(trace) == 0 {
		di.Trust = replay.DecideTrust(s, device, nil, nil)
		return di
	}
	if c.FromStart() && !di.Seeded {
		di.Coverage = CoverageFromStart
	} else {
		di.Coverage = CoverageLate // refined by inferRecording
	}
	return di
}

// replayOnce returns the replay of device that replayed gives, or a
// StatsOnly [replay.Run] of it when replayed is nil.
func replayOnce(s *snapshot.Snapshot, device int, replayed Replayed) (*replay.Result, error) {
	if replayed != nil {
		return replayed(device)
	}
	return replay.Run(s, device, replay.Options{Mode: replay.StatsOnly})
}

// RoundEntries reports whether n looks like a max_entries a person would
// choose: 1, 2 or 5 times a power of ten (from 10), a power of two (from
// 8), or a multiple of 1000.
func RoundEntries(n int) bool {
	if n < 8 {
		return false
	}
	if n&(n-1) == 0 || n%1000 == 0 {
		return true
	}
	for p := 10; p <= n; p *= 10 {
		if n == p || n == 2*p || n == 5*p {
			return true
		}
	}
	return false
}
