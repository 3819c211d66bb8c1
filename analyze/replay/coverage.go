package replay

import (
	"github.com/snapview/snapview/analyze/internal/addrmap"
	"github.com/snapview/snapview/snapshot"
)

// Coverage says what a snapshot holds for one device besides its
// segments: how long the trace is, whether stacks were recorded, and
// whether the trace can cover the whole run.
type Coverage struct {
	Device int
	// HasTraces is true when the file has device_traces (a legacy segment
	// list has none).
	HasTraces bool
	// Entries is the length of the device's trace.
	Entries int
	// FirstUS and LastUS are the time_us of the first and last entries
	// (microseconds since the Unix epoch), 0 when the entries have none.
	FirstUS, LastUS int64
	// TraceStacks counts trace entries with a non-empty stack.
	TraceStacks int
	// LiveBlocks counts active blocks in the segments; LiveBlockStacks
	// those with a stack.
	LiveBlocks, LiveBlockStacks int
	// OOMs counts oom entries.
	OOMs int
	// OrphanFrees counts addresses freed (free_requested or
	// free_completed) without an alloc earlier in the trace.
	OrphanFrees int
	// UntracedBlocks counts active blocks in the segments whose alloc is
	// not in the trace.
	UntracedBlocks int
}

// FromStart reports whether the trace can hold the whole history of the
// device: it has entries, frees only what it allocated, and allocated
// every block still alive. When false, the trace is the tail of the run:
// recording started late or the ring buffer (max_entries) wrapped, and the
// file cannot tell which.
func (c *Coverage) FromStart() bool {
	return c.Entries > 0 && c.OrphanFrees == 0 && c.UntracedBlocks == 0
}

// TraceCoverage returns the Coverage of one device of s. A replay
// (Result.Coverage) gets the same from the pass it makes anyway.
func TraceCoverage(s *snapshot.Snapshot, device int) Coverage {
	trace := DeviceTrace(s, device)
	scan := newCoverageScan(s, device, mapHint(len(trace)))
	for i := range trace {
		scan.step(&trace[i])
	}
	return scan.finish()
}

// coverageScan computes a device's Coverage one trace entry at a time, for
// TraceCoverage and for the first pass of a replay (seedState), which
// also needs to know which free_completed entries free a block allocated
// before the trace.
type coverageScan struct {
	s *snapshot.Snapshot
	c Coverage
	// live holds each address the trace allocated, or freed without an
	// alloc, while the block is still active (allocated or pending free):
	// scanAlloc for an alloc, scanOrphan for a free_requested without one.
	live addrmap.Map
}

const (
	scanAlloc  = 1
	scanOrphan = 2
)

func newCoverageScan(s *snapshot.Snapshot, device, hint int) *coverageScan {
	return &coverageScan{s: s, c: Coverage{Device: device, HasTraces: s.HasDeviceTraces}, live: addrmap.New(hint)}
}

// step takes the next trace entry. It reports whether e is a
// free_completed of a block allocated before the trace (no alloc of its
// address since the last free_completed there).
func (x *coverageScan) step(e *snapshot.TraceEntry) (freesOlder bool) {
	c := &x.c
	c.Entries++
	if e.Flags&snapshot.FlagTime != 0 {
		if c.FirstUS == 0 {
			c.FirstUS = e.TimeUS
		}
		c.LastUS = e.TimeUS
	}
	if len(x.s.Stack(e.Stack)) > 0 {
		c.TraceStacks++
	}
	switch e.Action {
	case snapshot.ActionAlloc:
		x.live.Set(e.Addr, scanAlloc)
	case snapshot.ActionFreeRequested:
		if _, ok := x.live.Get(e.Addr); !ok {
			c.OrphanFrees++
			// Its free_completed is part of the same orphan.
			x.live.Set(e.Addr, scanOrphan)
		}
	case snapshot.ActionFreeCompleted:
		v, ok := x.live.Get(e.Addr)
		if !ok {
			c.OrphanFrees++
		}
		freesOlder = !ok || v == scanOrphan
		x.live.Del(e.Addr)
	case snapshot.ActionOOM:
		c.OOMs++
	}
	return freesOlder
}

// finish returns the Coverage once every entry has been taken: the
// active blocks of the device's segments, and those the trace never
// allocated.
func (x *coverageScan) finish() Coverage {
	c, s := x.c, x.s
	lo, hi := s.DeviceSegments(c.Device)
	for i := lo; i < hi; i++ {
		seg := &s.Segments[i]
		if seg.Device != c.Device {
			continue
		}
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			if !b.State.Active() {
				continue
			}
			c.LiveBlocks++
			if len(s.Stack(b.Stack)) > 0 {
				c.LiveBlockStacks++
			}
			if _, ok := x.live.Get(b.Address); !ok {
				c.UntracedBlocks++
			}
		}
	}
	return c
}
