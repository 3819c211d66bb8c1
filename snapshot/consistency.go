package snapshot

import (
	"fmt"
	"slices"

	"github.com/snapview/snapview/internal/units"
)

// checkSegments leaves out the segments no allocator could have held at
// once: one listed twice (the same device, address and size), one that
// overlaps a segment of lower address on the same device, one whose range
// wraps past 2^64. Each kind is one warning with how many and the first
// case, so that reserved bytes are never counted twice and every view
// agrees on the segments. The others keep their file order.
func (c *converter) checkSegments() {
	segs := c.s.Segments
	if len(segs) == 0 {
		return
	}
	order := make([]int, len(segs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		sa, sb := &segs[a], &segs[b]
		if sa.Device != sb.Device {
			return sa.Device - sb.Device
		}
		switch {
		case sa.Address < sb.Address:
			return -1
		case sa.Address > sb.Address:
			return 1
		}
		return 0
	})
	drop := make([]bool, len(segs))
	var dup, over, wrap int
	var dupText, overText, wrapText string
	prev := -1 // the kept segment of highest end so far on this device
	var prevEnd uint64
	for _, i := range order {
		s := &segs[i]
		if prev >= 0 && segs[prev].Device != s.Device {
			prev = -1
		}
		start := uint64(s.Address)
		end := start + uint64(max(s.TotalSize, 0))
		switch {
		case end < start:
			drop[i] = true
			if wrap++; wrap == 1 {
				wrapText = fmt.Sprintf("segments[%d] at %v, %d bytes", i, s.Address, s.TotalSize)
			}
		case prev >= 0 && s.Address == segs[prev].Address && s.TotalSize == segs[prev].TotalSize:
			drop[i] = true
			if dup++; dup == 1 {
				dupText = fmt.Sprintf("segments[%d] repeats segments[%d] at %v", i, prev, s.Address)
			}
		case prev >= 0 && start < prevEnd:
			drop[i] = true
			if over++; over == 1 {
				overText = fmt.Sprintf("segments[%d] at %v overlaps segments[%d] at %v", i, s.Address, prev, segs[prev].Address)
			}
		default:
			if prev < 0 || end > prevEnd {
				prev, prevEnd = i, end
			}
		}
	}
	if dup+over+wrap == 0 {
		return
	}
	if dup > 0 {
		c.warnf("%s listed twice (%s): counted once", units.Plural(dup, "segment"), dupText)
	}
	if over > 0 {
		c.warnf("%s overlapping a segment at a lower address (%s): left out, so no byte is counted twice", units.Plural(over, "segment"), overText)
	}
	if wrap > 0 {
		c.warnf("%s with an address range that wraps past 2^64 (%s): left out", units.Plural(wrap, "segment"), wrapText)
	}
	kept := make([]Segment, 0, len(segs)-dup-over-wrap)
	for i := range segs {
		if !drop[i] {
			kept = append(kept, segs[i])
		}
	}
	c.s.Segments = kept
}

// checkBlocks warns once about active blocks whose requested_size is
// above their size (PyTorch rounds requests up, never down).
func (c *converter) checkBlocks() {
	n := 0
	var first string
	for i := range c.s.Segments {
		for j, b := range c.s.Segments[i].Blocks {
			if b.State.Active() && b.RequestedSize > b.Size {
				if n++; n == 1 {
					first = fmt.Sprintf("segments[%d].blocks[%d] requests %d bytes of a %d-byte block", i, j, b.RequestedSize, b.Size)
				}
			}
		}
	}
	if n > 0 {
		c.warnf("%s with requested_size above the block's size (%s): requested figures from the file are wrong", units.Plural(n, "active block"), first)
	}
}

// checkTimes warns once per device whose trace goes back in time.
func (c *converter) checkTimes() {
	for d, tr := range c.s.Traces {
		n := 0
		var first string
		var last int64
		have := false
		for i := range tr {
			e := &tr[i]
			if e.Flags&FlagTime == 0 {
				continue
			}
			if have && e.TimeUS < last {
				if n++; n == 1 {
					first = fmt.Sprintf("entry %d is %d µs before the one before it", i, last-e.TimeUS)
				}
			}
			last, have = e.TimeUS, true
		}
		if n > 0 {
			c.warnf("device_traces[%d]: time_us goes backwards %s (%s): times and durations on this device may be wrong", d, units.Plural(n, "time"), first)
		}
	}
}

// maxDeviceBytes is the most bytes one device's segments, or one device's
// trace allocations taken together, may add up to: 4 EiB (2^62). No device
// holds a millionth of it (an H200 has 2^37 bytes; 2 million allocations of
// 80 GB add up to 2^57), and every figure of the views (sums, peaks,
// differences) then fits int64.
const maxDeviceBytes = 1 << 62

// checkSizes fails the conversion when a device's segments or trace
// allocations add up past maxDeviceBytes: sums that wrapped printed "-8.0
// EiB reserved". It costs one pass over the segments and the traces.
func (c *converter) checkSizes() {
	seg := map[int]uint64{}
	for i := range c.s.Segments {
		s := &c.s.Segments[i]
		if seg[s.Device] += uint64(max(s.TotalSize, 0)); seg[s.Device] > maxDeviceBytes {
			c.failf(fmt.Sprintf("segments[%d].total_size", i), "the segments of device %d add up past 4 EiB (2^62 bytes): no device holds that much", s.Device)
			return
		}
	}
	for d, tr := range c.s.Traces {
		var sum uint64
		for i := range tr {
			if tr[i].Action != ActionAlloc {
				continue
			}
			if sum += uint64(max(tr[i].Size, 0)); sum > maxDeviceBytes {
				c.failf(fmt.Sprintf("device_traces[%d][%d].size", d, i), "the allocations of device %d add up past 4 EiB (2^62 bytes): no device allocates that much", d)
				return
			}
		}
	}
}
