package replay

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/snapshot"
)

// SegmentUsage is how one segment, or a group of segments, was used when
// the snapshot was taken. Byte figures are in bytes.
//
// "Allocated" follows PyTorch's two tools: AllocatedBytes is the block
// sizes of live tensors (memory_stats() allocated_bytes), RequestedBytes
// what the callers asked for (the "allocated" of _memory_viz stats,
// torch/cuda/_memory_viz.py segsum). FreeBytes is segsum's "free":
// everything of the segment that is not requested by a live tensor.
type SegmentUsage struct {
	// Index is the segment's index in Snapshot.Segments; -1 for a group.
	Index int
	// Device is the CUDA device ordinal.
	Device int
	// Addr is the segment's address (zero for a group).
	Addr snapshot.Addr
	// Size is the bytes reserved: segment total_size, or their sum.
	Size int64
	// Large is true for the large pool; Pool is the private pool id
	// ((0, 0) for the default pools).
	Large bool
	Pool  snapshot.PoolID
	// Stream is the segment's cudaStream_t value (zero for a group).
	Stream uint64
	// Expandable is segment is_expandable.
	Expandable bool

	// Segments is the number of segments (1 for a single one).
	Segments int
	// Blocks counts all blocks; AllocatedBlocks, PendingFreeBlocks and
	// InactiveBlocks those in each state.
	Blocks, AllocatedBlocks, PendingFreeBlocks, InactiveBlocks int

	// AllocatedBytes is Σ size of active_allocated blocks.
	AllocatedBytes int64
	// RequestedBytes is Σ requested_size of active_allocated blocks.
	RequestedBytes int64
	// PendingFreeBytes is Σ size of active_pending_free blocks: freed by
	// the program, still in use by another stream.
	PendingFreeBytes int64
	// PendingFreeRequestedBytes is Σ requested_size of active_pending_free
	// blocks.
	PendingFreeRequestedBytes int64
	// InactiveBytes is Σ size of inactive (cached, free) blocks.
	InactiveBytes int64
	// LargestFree is the size of the largest inactive block: the biggest
	// request the segments could serve without a new cudaMalloc.
	LargestFree int64
}

// FreeBytes is the segment's free memory as _memory_viz stats counts it:
// Size minus the requested bytes of live tensors (inactive and pending-free
// blocks, plus the rounding slack inside live blocks).
func (u *SegmentUsage) FreeBytes() int64 { return u.Size - u.RequestedBytes }

// InternalFreeBytes is the rounding slack inside live blocks: block sizes
// minus requested sizes (segsum's "internal" free).
func (u *SegmentUsage) InternalFreeBytes() int64 { return u.AllocatedBytes - u.RequestedBytes }

// ActiveBytes is Σ size of active blocks, allocated or pending free
// (memory_stats() active_bytes).
func (u *SegmentUsage) ActiveBytes() int64 { return u.AllocatedBytes + u.PendingFreeBytes }

// ActiveRequestedBytes is Σ requested_size of active blocks, allocated or
// pending free (memory_stats() requested_bytes).
func (u *SegmentUsage) ActiveRequestedBytes() int64 {
	return u.RequestedBytes + u.PendingFreeRequestedBytes
}

// add accumulates v into u (a group).
func (u *SegmentUsage) add(v *SegmentUsage) {
	u.Size += v.Size
	u.Segments += v.Segments
	u.Blocks += v.Blocks
	u.AllocatedBlocks += v.AllocatedBlocks
	u.PendingFreeBlocks += v.PendingFreeBlocks
	u.InactiveBlocks += v.InactiveBlocks
	u.AllocatedBytes += v.AllocatedBytes
	u.RequestedBytes += v.RequestedBytes
	u.PendingFreeBytes += v.PendingFreeBytes
	u.PendingFreeRequestedBytes += v.PendingFreeRequestedBytes
	u.InactiveBytes += v.InactiveBytes
	u.LargestFree = max(u.LargestFree, v.LargestFree)
}

// SegmentUsages returns the usage of every segment of one device (every
// device when device is negative), in file order (PyTorch sorts segments
// by device, then address).
func SegmentUsages(s *snapshot.Snapshot, device int) []SegmentUsage {
	out := []SegmentUsage{}
	lo, hi := 0, len(s.Segments)
	if device >= 0 {
		lo, hi = s.DeviceSegments(device)
	}
	for i := lo; i < hi; i++ {
		seg := &s.Segments[i]
		if device >= 0 && seg.Device != device {
			continue
		}
		u := SegmentUsage{
			Index:      i,
			Device:     seg.Device,
			Addr:       seg.Address,
			Size:       seg.TotalSize,
			Large:      allocator.IsLargeSegment(seg),
			Pool:       seg.Pool,
			Stream:     seg.Stream,
			Expandable: seg.Expandable,
			Segments:   1,
			Blocks:     len(seg.Blocks),
		}
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			switch b.State {
			case snapshot.StateActiveAllocated:
				u.AllocatedBlocks++
				u.AllocatedBytes += b.Size
				u.RequestedBytes += b.RequestedSize
			case snapshot.StateActivePendingFree:
				u.PendingFreeBlocks++
				u.PendingFreeBytes += b.Size
				u.PendingFreeRequestedBytes += b.RequestedSize
			case snapshot.StateInactive, snapshot.StateUnknown:
				// A state this snapview does not know counts as free,
				// as the replay and memory_stats() figures take it.
				u.InactiveBlocks++
				u.InactiveBytes += b.Size
				u.LargestFree = max(u.LargestFree, b.Size)
			}
		}
		out = append(out, u)
	}
	return out
}

// SumSegments returns the totals of us as one group (Index -1, zero
// address and stream; Device, Large and Pool from the first element).
func SumSegments(us []SegmentUsage) SegmentUsage {
	t := SegmentUsage{Index: -1}
	if len(us) > 0 {
		t.Device, t.Large, t.Pool = us[0].Device, us[0].Large, us[0].Pool
	}
	for i := range us {
		t.add(&us[i])
	}
	return t
}

// PoolUsages groups us by private pool and by large/small pool: the
// default pools first, then each private pool by id; within a pool, large
// before small. Pools without segments are left out.
func PoolUsages(us []SegmentUsage) []SegmentUsage {
	type key struct {
		pool  snapshot.PoolID
		large bool
	}
	groups := map[key]*SegmentUsage{}
	for i := range us {
		k := key{us[i].Pool, us[i].Large}
		g := groups[k]
		if g == nil {
			g = &SegmentUsage{Index: -1, Device: us[i].Device, Large: k.large, Pool: k.pool}
			groups[k] = g
		}
		g.add(&us[i])
	}
	out := make([]SegmentUsage, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b SegmentUsage) int {
		if c := cmp.Compare(a.Pool[0], b.Pool[0]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Pool[1], b.Pool[1]); c != 0 {
			return c
		}
		switch {
		case a.Large && !b.Large:
			return -1
		case !a.Large && b.Large:
			return 1
		}
		return 0
	})
	return out
}
