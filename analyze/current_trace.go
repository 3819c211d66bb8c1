package analyze

import "github.com/snapview/snapview/snapshot"

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

// TraceCoverage returns the Coverage of one device of s.
func TraceCoverage(s *snapshot.Snapshot, device int) Coverage {
	c := Coverage{Device: device, HasTraces: s.HasDeviceTraces}
	var trace []snapshot.TraceEntry
	if device >= 0 && device < len(s.Traces) {
		trace = s.Traces[device]
	}
	c.Entries = len(trace)
	// live maps each address the trace allocated to whether it is still
	// active (allocated or pending free) at the end of the trace.
	live := newAddrMap(1024) // addresses present are live
	for i := range trace {
		e := &trace[i]
		if e.Flags&snapshot.FlagTime != 0 {
			if c.FirstUS == 0 {
				c.FirstUS = e.TimeUS
			}
			c.LastUS = e.TimeUS
		}
		if len(s.Stack(e.Stack)) > 0 {
			c.TraceStacks++
		}
		switch e.Action {
		case snapshot.ActionAlloc:
			live.set(e.Addr, 1)
		case snapshot.ActionFreeRequested:
			if _, ok := live.get(e.Addr); !ok {
				c.OrphanFrees++
				// Its free_completed is part of the same orphan.
				live.set(e.Addr, 1)
			}
		case snapshot.ActionFreeCompleted:
			if _, ok := live.get(e.Addr); !ok {
				c.OrphanFrees++
			}
			live.del(e.Addr)
		case snapshot.ActionOOM:
			c.OOMs++
		}
	}
	lo, hi := s.DeviceSegments(device)
	for i := lo; i < hi; i++ {
		seg := &s.Segments[i]
		if seg.Device != device {
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
			if _, ok := live.get(b.Address); !ok {
				c.UntracedBlocks++
			}
		}
	}
	return c
}
