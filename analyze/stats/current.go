package stats

import (
	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/snapshot"
)

// CurrentStats returns the Cur Usage column of torch.cuda.memory_stats()
// for one device, computed from the snapshot's segments alone (the blocks
// as they were when the snapshot was taken). Known.Current is Exact; every
// other figure (peaks, totals, OOM and retry counters) is Unknown and
// zero. Known.Requested is the device's verdict on its requested sizes
// (the rule in [DecideTrust]).
//
// The rules mirror what c10/cuda/CUDACachingAllocator.cpp counts, as
// torch.cuda.memory_stats() reports it (see docs/format.md, "memory_stats()
// from the segments alone"); the pool of a segment is its segment_type:
//
//   - reserved_bytes: Σ segment total_size;
//   - segment: the number of segments that are not expandable (PyTorch
//     2.11 counts no segments for expandable_segments);
//   - allocated_bytes / allocation: Σ size / number of active_allocated
//     blocks;
//   - active_bytes / active: Σ size / number of active_allocated and
//     active_pending_free blocks;
//   - requested_bytes: Σ requested_size of active blocks;
//   - inactive_split_bytes / inactive_split: Σ size / number of inactive
//     blocks in segments of more than one block (a lone free block can be
//     released), expandable segments excluded;
//   - oversize_allocations / oversize_segments: active_allocated blocks /
//     segments of at least allocator_settings.max_split_size bytes (none
//     when it is -1, unlimited, or the file has no allocator_settings).
//
// Segments in private pools (CUDA graphs, MemPools) count like any other,
// as they do in memory_stats().
func CurrentStats(s *snapshot.Snapshot, device int) *MemoryStats {
	st := &MemoryStats{
		Device:       device,
		MaxSplitSize: -1,
		Known:        Known{Current: Exact},
	}
	st.Known.Requested, st.Known.RequestedWhy = RequestedTrust(s, device)
	if s.Settings != nil {
		st.MaxSplitSize = s.Settings.MaxSplitSize
	}
	cfg := allocator.FromSettings(s.Settings)
	oversize := cfg.IsOversize
	lo, hi := s.DeviceSegments(device)
	for i := lo; i < hi; i++ {
		seg := &s.Segments[i]
		if seg.Device != device {
			continue
		}
		pool := PoolSmall
		if allocator.IsLargeSegment(seg) {
			pool = PoolLarge
		}
		add := func(stat *[NumPools]Stat, v int64) {
			stat[PoolAll].Current += v
			stat[pool].Current += v
		}
		add(&st.ReservedBytes, seg.TotalSize)
		if !seg.Expandable {
			add(&st.Segment, 1)
		}
		if oversize(seg.TotalSize) {
			st.OversizeSegments.Current++
		}
		split := len(seg.Blocks) > 1 && !seg.Expandable
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			switch {
			case b.State == snapshot.StateActiveAllocated:
				add(&st.AllocatedBytes, b.Size)
				add(&st.Allocation, 1)
				if oversize(b.Size) {
					st.OversizeAllocations.Current++
				}
			case b.State == snapshot.StateInactive && split:
				add(&st.InactiveSplitBytes, b.Size)
				add(&st.InactiveSplit, 1)
			}
			if b.State.Active() {
				add(&st.ActiveBytes, b.Size)
				add(&st.Active, 1)
				add(&st.RequestedBytes, b.RequestedSize)
			}
		}
	}
	return st
}
