package hostreplay

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

const maxDifferences = 4

// check compares the replayed end state with the file's host_segments:
// the same blocks (address and size) in the same states.
func (p *replayer) check() {
	if !slices.Contains(p.s.TopLevelKeys, "host_segments") {
		return
	}
	r := p.r
	r.Checked = true
	differ := func(format string, args ...any) {
		if len(r.Differences) < maxDifferences {
			r.Differences = append(r.Differences, fmt.Sprintf(format, args...))
		}
	}
	seen := map[snapshot.Addr]bool{}
	for i := range p.s.HostSegments {
		sg := &p.s.HostSegments[i]
		seen[sg.Address] = true
		b := p.blocks[sg.Address]
		if b == nil {
			differ("host segment at %#x (%s): not pinned in the replay", uint64(sg.Address), units.Bytes(sg.TotalSize))
			continue
		}
		if b.Size != sg.TotalSize {
			differ("host segment at %#x: %s in the file, %s in the replay", uint64(sg.Address), units.Bytes(sg.TotalSize), units.Bytes(b.Size))
		}
		if len(sg.Blocks) > 0 {
			if want := stateOf(sg.Blocks[0].State); want != b.State {
				differ("host block at %#x: %s in the file, %s in the replay", uint64(sg.Address), sg.Blocks[0].State, b.State)
			}
		}
	}
	for _, b := range r.End {
		if !seen[b.Addr] {
			differ("host block at %#x (%s): pinned in the replay, not in the file", uint64(b.Addr), units.Bytes(b.Size))
		}
	}
	r.Equal = len(r.Differences) == 0
}

func stateOf(s snapshot.BlockState) BlockState {
	switch s {
	case snapshot.StateActiveAllocated:
		return Allocated
	case snapshot.StateActivePendingFree:
		return PendingFree
	}
	return Cached
}

// trust is the device's trust rule (analyze/replay DecideTrust) for the
// host allocator, in order: no host trace entries: Unknown; the trace
// breaks a rule of the host allocator: Unknown; no host_segments to check
// the end state with: LowerBound; the end state differs: Unknown; blocks
// older than the trace: LowerBound; otherwise Exact.
func (p *replayer) trust() (stats.Exactness, string) {
	r := p.r
	switch {
	case len(p.s.HostTraces) == 0:
		return stats.Unknown, "no host_traces entries: the file holds the pinned memory at the dump only"
	case r.NumDeviations > 0:
		return stats.Unknown, "the host trace breaks a rule of the caching host allocator (" + r.Deviations[0] + ")"
	case !r.Checked:
		return stats.LowerBound, "the file has no host_segments: the end state comes from the trace alone and cannot be checked"
	case !r.Equal:
		return stats.Unknown, "the replayed host end state differs from the file's host_segments (" + r.Differences[0] + ")"
	case r.Seeded > 0:
		return stats.LowerBound, "the host trace misses the start of the run (" + units.Plural(r.Seeded, "block") + " pinned before it)"
	}
	return stats.Exact, ""
}

// StackTotal is the live (handed out or waiting for events) pinned memory
// of one allocation stack at the end: Bytes in bytes, Count blocks.
type StackTotal struct {
	Stack snapshot.StackID
	Bytes int64
	Count int
}

// LiveByStack groups the end state's handed-out and pending-free blocks
// by the stack that allocated them, largest first (ties by stack id).
func (r *Result) LiveByStack() []StackTotal {
	idx := map[snapshot.StackID]int{}
	var out []StackTotal
	for _, b := range r.End {
		if b.State == Cached {
			continue
		}
		i, ok := idx[b.Stack]
		if !ok {
			i = len(out)
			idx[b.Stack] = i
			out = append(out, StackTotal{Stack: b.Stack})
		}
		out[i].Bytes += b.Size
		out[i].Count++
	}
	slices.SortFunc(out, func(a, b StackTotal) int {
		if a.Bytes != b.Bytes {
			return cmp.Compare(b.Bytes, a.Bytes)
		}
		return cmp.Compare(a.Stack, b.Stack)
	})
	return out
}
