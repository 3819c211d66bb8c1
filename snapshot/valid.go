package snapshot

import "fmt"

// CheckValid checks the model's invariants: every StackID, FrameID and
// StrID is in range; sizes are not negative; the blocks of each segment are
// contiguous from its address and their sizes sum to its TotalSize
// (PyTorch's snapshot() writes them so); the file's per-segment sums
// (allocated_size, active_size) agree with the blocks.
func (s *Snapshot) CheckValid() error {
	stack := func(id StackID) error {
		if id < 0 || int(id) >= len(s.Stacks) {
			return fmt.Errorf("stack id %d out of range", id)
		}
		return nil
	}
	if len(s.Stacks) == 0 || len(s.Stacks[0]) != 0 {
		return fmt.Errorf("stack 0 must be the empty stack")
	}
	for i, st := range s.Stacks {
		for _, f := range st {
			if f < 0 || int(f) >= len(s.Frames) {
				return fmt.Errorf("stacks[%d]: frame id %d out of range", i, f)
			}
		}
	}
	for i := range s.Segments {
		seg := &s.Segments[i]
		if err := stack(seg.Stack); err != nil {
			return fmt.Errorf("segments[%d]: %v", i, err)
		}
		if seg.TotalSize < 0 {
			return fmt.Errorf("segments[%d]: negative total_size %d", i, seg.TotalSize)
		}
		next := seg.Address
		var sum, alloc, active int64
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			if err := stack(b.Stack); err != nil {
				return fmt.Errorf("segments[%d].blocks[%d]: %v", i, j, err)
			}
			if b.Size < 0 {
				return fmt.Errorf("segments[%d].blocks[%d]: negative size %d", i, j, b.Size)
			}
			if b.Address != next {
				return fmt.Errorf("segments[%d].blocks[%d]: address %v, want %v (blocks must be contiguous)", i, j, b.Address, next)
			}
			next = b.Address + Addr(b.Size)
			sum += b.Size
			switch b.State {
			case StateActiveAllocated:
				alloc += b.Size
				active += b.Size
			case StateActivePendingFree:
				active += b.Size
			}
		}
		if len(seg.Blocks) > 0 && sum != seg.TotalSize {
			return fmt.Errorf("segments[%d]: blocks sum to %d bytes, total_size is %d", i, sum, seg.TotalSize)
		}
		if alloc != seg.AllocatedSize {
			return fmt.Errorf("segments[%d]: active_allocated blocks sum to %d bytes, allocated_size is %d", i, alloc, seg.AllocatedSize)
		}
		if active != seg.ActiveSize {
			return fmt.Errorf("segments[%d]: active blocks sum to %d bytes, active_size is %d", i, active, seg.ActiveSize)
		}
	}
	for d, tr := range s.Traces {
		for i := range tr {
			if err := stack(tr[i].Stack); err != nil {
				return fmt.Errorf("device_traces[%d][%d]: %v", d, i, err)
			}
			if int(tr[i].CompileContext) >= len(s.Strings) || int(tr[i].UserMetadata) >= len(s.Strings) {
				return fmt.Errorf("device_traces[%d][%d]: string id out of range", d, i)
			}
		}
	}
	return nil
}
