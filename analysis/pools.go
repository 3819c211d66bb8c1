package analysis

import (
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// HasPrivatePools reports whether the file's segments of device hold a
// private pool (a CUDA-graph capture's, a MemPool). It reads the
// segments only.
func (f *File) HasPrivatePools(device int) bool {
	lo, hi := f.Snap.DeviceSegments(device)
	for i := lo; i < hi; i++ {
		if sg := &f.Snap.Segments[i]; sg.Device == device && !sg.Pool.IsDefault() {
			return true
		}
	}
	return false
}

// Pools returns the figures of the private pools of device, sorted by
// pool id (nil when the file's segments of the device hold none), as
// every view shows them: the figures at the dump from the file's segments
// (stats.CurrentPools), the history from the device's replay
// (replay.Result.Pools, kept in every replay.Mode), merged as [File.Stats]
// merges memory_stats(). The device is replayed (once, shared with the
// other views) only when it has private pools and trace entries; without
// a trace, or when the replay fails, the history is Unknown, Known.Why
// saying why.
func (f *File) Pools(device int) []stats.PoolFigures {
	cur := stats.CurrentPools(f.Snap, device)
	why := func(w string) []stats.PoolFigures {
		for k := range cur {
			cur[k].Known.Why = w
		}
		return cur
	}
	if len(cur) == 0 || !f.HasTrace(device) {
		return why("no trace")
	}
	r, err := f.Replay(device)
	if err != nil {
		return why("the replay failed: " + err.Error())
	}
	hist := map[snapshot.PoolID]*stats.PoolFigures{}
	for k := range r.Pools {
		hist[r.Pools[k].Pool] = &r.Pools[k]
	}
	for k := range cur {
		c := &cur[k]
		h := hist[c.Pool]
		if h == nil {
			continue
		}
		c.ReservedHighWater, c.ActiveAtPeak = h.ReservedHighWater, h.ActiveAtPeak
		c.Allocations, c.FirstAlloc = h.Allocations, h.FirstAlloc
		c.Known.History, c.Known.Why = h.Known.History, r.Stats.Known.Why
		c.HighWater, c.HighWaterWhy = h.HighWater, h.HighWaterWhy
	}
	return cur
}
