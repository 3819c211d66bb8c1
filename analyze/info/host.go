package info

import (
	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/analyze/hostreplay"
	"github.com/snapview/snapview/snapshot"
)

// HostMemory is what a snapshot says about pinned host memory: the
// segments and trace of the CUDA host (pinned) allocator, which PyTorch
// after 2.11 records with _record_memory_history(record_pinned_host_memory=True)
// in the keys host_segments and host_traces (pytorch/pytorch#182407). The
// pinned allocator keeps its own books (torch.cuda.host_memory_stats()):
// Replay is host_traces replayed under its rules (package
// analyze/hostreplay), with its own trust.
type HostMemory struct {
	// Present is true when the file's host_segments or host_traces hold
	// anything (snapshot.Snapshot.HasHostTraces).
	Present bool
	// Segments counts the host segments; ReservedBytes sums their sizes;
	// AllocatedBytes and Allocations are their active_allocated blocks;
	// CachedBytes their inactive blocks (pinned memory kept for reuse).
	Segments, Allocations                      int
	ReservedBytes, AllocatedBytes, CachedBytes int64
	// Entries is the length of host_traces; FirstUS and LastUS the time_us
	// of its first and last entries (0 without); Actions counts entries per
	// action, in action order.
	Entries         int
	FirstUS, LastUS int64
	Actions         []snapshot.Count
	// Replay is the host trace replayed under the caching host allocator's
	// rules: host_memory_stats() figures, their trust and the end state;
	// Live its handed-out blocks by allocation stack, largest first.
	Replay hostreplay.Result
	Live   []HostStack
}

// HostStack is the pinned memory one allocation stack holds at the end:
// Bytes in bytes, in Count blocks; Where is the stack's innermost frame of
// the user (its innermost frame when it has none; "" without frames).
type HostStack struct {
	hostreplay.StackTotal
	Where string
}

// Host summarises the pinned host memory of s.
func Host(s *snapshot.Snapshot) HostMemory {
	h := HostMemory{Present: s.HasHostTraces, Segments: len(s.HostSegments), Entries: len(s.HostTraces)}
	for i := range s.HostSegments {
		sg := &s.HostSegments[i]
		h.ReservedBytes += sg.TotalSize
		for j := range sg.Blocks {
			switch b := &sg.Blocks[j]; b.State {
			case snapshot.StateActiveAllocated:
				h.Allocations++
				h.AllocatedBytes += b.Size
			case snapshot.StateInactive:
				h.CachedBytes += b.Size
			}
		}
	}
	var counts actionTally
	for i := range s.HostTraces {
		e := &s.HostTraces[i]
		counts[e.Action]++
		if e.Flags&snapshot.FlagTime != 0 {
			if h.FirstUS == 0 {
				h.FirstUS = e.TimeUS
			}
			h.LastUS = e.TimeUS
		}
	}
	h.Actions = counts.counts(s)
	h.Replay = hostreplay.Run(s)
	h.Live = []HostStack{}
	for _, st := range h.Replay.LiveByStack() {
		h.Live = append(h.Live, HostStack{StackTotal: st, Where: innermostUser(s, st.Stack)})
	}
	return h
}

// innermostUser is the text of the stack's innermost frame of the user,
// or of its innermost frame when no frame is the user's.
func innermostUser(s *snapshot.Snapshot, id snapshot.StackID) string {
	stack := s.Stack(id)
	for _, f := range stack {
		if frames.ClassifyFrame(s.Frames[f]) == frames.FrameUser {
			return frames.FrameText(s.Frames[f])
		}
	}
	if len(stack) > 0 {
		return frames.FrameText(s.Frames[stack[0]])
	}
	return ""
}
