package whatif

import (
	"fmt"

	"github.com/snapview/snapview/snapshot"
)

// SelfCheck is the comparison of the file with its simulation under the
// file's own settings and cap.
type SelfCheck struct {
	// Exact is true when the simulation made every segment_alloc,
	// segment_free, segment_map and segment_unmap of the file, of the
	// same size, at the same place and in the same order, put every
	// allocation in the same segment at the same offset, reached the same
	// peak reserved and allocated bytes, and failed exactly the requests
	// the file failed.
	Exact bool
	// DivergedAt is the trace entry where the simulation first differs
	// from the file, -1 when it does not (or only the peaks differ).
	DivergedAt int
	// Reason says how it differs there ("" when Exact).
	Reason string
}

// checker is the observer that compares a simulation under the file's
// own settings with the file.
type checker struct {
	p      *program
	s      *sim
	cursor int              // next of p.segEntries to match
	esBase map[int32]uint64 // trace address of each simulated expandable segment's base
	res    SelfCheck
	failed bool
	// capSide says, at the divergence, which way the cap simulated was
	// off: -1 too low (the simulation frees cached segments, or fails a
	// request, where the file did not), +1 too high (the file frees or
	// fails where the simulation does not), 0 neither or unknown.
	capSide int
}

func newChecker(p *program) *checker {
	return &checker{p: p, esBase: map[int32]uint64{}, res: SelfCheck{Exact: true, DivergedAt: -1}}
}

func (c *checker) fail(entry int, format string, args ...any) {
	if c.failed {
		return
	}
	c.failed = true
	c.res = SelfCheck{Exact: false, DivergedAt: entry, Reason: fmt.Sprintf(format, args...)}
}

// traceAddr translates a simulated address in expandable segment es (-1:
// a cudaMalloc'd segment, whose address the simulation takes from the
// trace) to the file's address space.
func (c *checker) traceAddr(addr uint64, es int32) (uint64, bool) {
	if es < 0 {
		return addr, true
	}
	base, ok := c.esBase[es]
	if !ok {
		return 0, false
	}
	return base + (addr - c.s.es[es].base), true
}

func (c *checker) segment(ev segEvent) {
	if c.failed {
		return
	}
	segs := c.p.segEntries
	if c.cursor >= len(segs) {
		c.fail(c.current(), "the simulation makes a %s of %d bytes the file does not have", ev.action, ev.size)
		return
	}
	j := int(segs[c.cursor])
	e := &c.p.trace[j]
	if e.Action != ev.action || e.Size != ev.size {
		switch fr, sr := isRelease(e.Action), isRelease(ev.action); {
		case sr && !fr:
			c.capSide = -1
		case fr && !sr:
			c.capSide = +1
		}
		c.fail(j, "the file has a %s of %d bytes, the simulation a %s of %d bytes", e.Action, e.Size, ev.action, ev.size)
		return
	}
	if ev.es >= 0 {
		if _, ok := c.esBase[ev.es]; !ok {
			c.esBase[ev.es] = uint64(e.Addr) - (ev.addr - c.s.es[ev.es].base)
		}
	}
	if a, _ := c.traceAddr(ev.addr, ev.es); a != uint64(e.Addr) {
		c.fail(j, "the file's %s of %d bytes is at %v, the simulation's at %v", e.Action, e.Size, e.Addr, snapshot.Addr(a))
		return
	}
	c.cursor++
}

// current is the entry of the segment event the simulation expects next,
// or the last entry.
func (c *checker) current() int {
	if c.cursor < len(c.p.segEntries) {
		return int(c.p.segEntries[c.cursor])
	}
	return len(c.p.trace) - 1
}

func (c *checker) done(o *op, ok bool, b int32) {
	if c.failed {
		return
	}
	if o == nil {
		// End of the trace.
		if c.cursor < len(c.p.segEntries) {
			j := int(c.p.segEntries[c.cursor])
			e := &c.p.trace[j]
			c.fail(j, "the file's %s of %d bytes does not happen in the simulation", e.Action, e.Size)
		}
		return
	}
	i := int(o.entry)
	if c.cursor < len(c.p.segEntries) && int(c.p.segEntries[c.cursor]) < i {
		j := int(c.p.segEntries[c.cursor])
		e := &c.p.trace[j]
		if isRelease(e.Action) {
			c.capSide = +1
		}
		c.fail(j, "the file's %s of %d bytes does not happen in the simulation (it serves the request at entry %d from its cache)", e.Action, e.Size, i)
		return
	}
	e := &c.p.trace[i]
	switch {
	case o.kind == opAlloc && !ok:
		c.capSide = -1
		c.fail(i, "the request of %d bytes fails in the simulation; the file served it", e.Size)
	case o.kind == opOOM && ok:
		c.capSide = +1
		c.fail(i, "the request of %d bytes fails in the file; the simulation serves it", e.Size)
	case o.kind == opAlloc:
		x := &c.s.blocks[b]
		a, known := c.traceAddr(x.addr, x.es)
		if !known || a != uint64(e.Addr) {
			c.fail(i, "the file puts the %d-byte request at %v, the simulation %s", e.Size, e.Addr, c.describe(b))
		}
	}
}

// describe says where block b is, in the file's addresses when known.
func (c *checker) describe(b int32) string {
	x := &c.s.blocks[b]
	if a, ok := c.traceAddr(x.addr, x.es); ok {
		return fmt.Sprintf("at %v", snapshot.Addr(a))
	}
	return "in an expandable segment the file never mapped"
}

// finish compares the peaks once the simulation is over.
func (c *checker) finish(out Outcome) SelfCheck {
	if !c.failed && (out.PeakReserved != c.p.peakReserved || out.PeakAllocated != c.p.peakAllocated) {
		c.failed = true
		c.res = SelfCheck{DivergedAt: -1, Reason: fmt.Sprintf(
			"peak reserved %d and allocated %d bytes in the simulation, %d and %d in the file",
			out.PeakReserved, out.PeakAllocated, c.p.peakReserved, c.p.peakAllocated)}
	}
	if !c.failed && c.p.nproblems > 0 {
		c.failed = true
		c.res = SelfCheck{DivergedAt: -1, Reason: fmt.Sprintf("%d trace entries could not be followed (%s)", c.p.nproblems, c.p.problems[0])}
	}
	return c.res
}
