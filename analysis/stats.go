package analysis

import (
	"fmt"
	"slices"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
)

// Stats returns the memory_stats() figures of device, and notes about
// them for the user (shown on stderr, or under the device's heading on the
// report):
//
//   - the Cur Usage figures come from the segments (stats.CurrentStats);
//   - the Peak, Tot Alloc and Tot Freed figures, CUDA OOMs, cudaMalloc
//     retries and the num_device_* counters come from the device's replay,
//     marked as the one trust rule decides (replay.DecideTrust, in
//     Result.Stats.Known); without a trace, or when the replay failed,
//     they are unknown.
//
// Every view that shows memory_stats() figures takes them from here.
func (f *File) Stats(device int) (*stats.MemoryStats, []string) {
	s := f.Snap
	st := stats.CurrentStats(s, device)
	if !f.HasTrace(device) {
		st.Known = replay.DecideTrust(s, device, nil, nil)
		return st, nil
	}
	r, err := f.Replay(device)
	if err != nil {
		st.Known = replay.DecideTrust(s, device, nil, err)
		return st, []string{fmt.Sprintf("device %d: %v; the Peak and Tot columns are unknown", device, err)}
	}
	mergeHistory(st, &r.Stats)
	if st.Known.History == stats.Unknown {
		return st, []string{fmt.Sprintf("device %d: %s; the Peak and Tot columns are unknown", device, st.Known.Why)}
	}
	return st, nil
}

// mergeHistory copies every figure but the Cur Usage ones, with their
// exactness, from src into dst.
func mergeHistory(dst, src *stats.MemoryStats) {
	pooled := []struct {
		d, s *[stats.NumPools]stats.Stat
	}{
		{&dst.Allocation, &src.Allocation},
		{&dst.Segment, &src.Segment},
		{&dst.Active, &src.Active},
		{&dst.InactiveSplit, &src.InactiveSplit},
		{&dst.AllocatedBytes, &src.AllocatedBytes},
		{&dst.ReservedBytes, &src.ReservedBytes},
		{&dst.ActiveBytes, &src.ActiveBytes},
		{&dst.InactiveSplitBytes, &src.InactiveSplitBytes},
		{&dst.RequestedBytes, &src.RequestedBytes},
	}
	keep := func(d *stats.Stat, s stats.Stat) {
		cur := d.Current
		*d = s
		d.Current = cur
	}
	for _, f := range pooled {
		for p := range stats.NumPools {
			keep(&f.d[p], f.s[p])
		}
	}
	keep(&dst.OversizeAllocations, src.OversizeAllocations)
	keep(&dst.OversizeSegments, src.OversizeSegments)
	dst.NumAllocRetries = src.NumAllocRetries
	dst.NumAllocRetriesMax = src.NumAllocRetriesMax
	dst.NumOOMs = src.NumOOMs
	dst.NumSyncAllStreams = src.NumSyncAllStreams
	dst.NumDeviceAlloc = src.NumDeviceAlloc
	dst.NumDeviceFree = src.NumDeviceFree
	dst.Known = src.Known
}

// StatsOf is Stats of each of devices, in order, their replays run side
// by side first (ReplayAll, on up to GOMAXPROCS goroutines): the figures
// `summary` shows. The notes are Stats' as warnings, in device order.
func (f *File) StatsOf(devices []int) ([]*stats.MemoryStats, []Note) {
	f.ReplayAll(slices.DeleteFunc(slices.Clone(devices), func(d int) bool { return !f.HasTrace(d) }))
	all := make([]*stats.MemoryStats, len(devices))
	var notes []Note
	for k, d := range devices {
		var ws []string
		all[k], ws = f.Stats(d)
		for _, w := range ws {
			notes = append(notes, Note{Kind: Warning, Text: w})
		}
	}
	return all, notes
}
