package snapshot

import (
	"slices"
	"sort"
)

// groupByDevice orders the segments by device, keeping file order within
// a device (PyTorch writes them so already), so that DeviceSegments can
// find a device's segments without a pass over all of them.
func (c *converter) groupByDevice() {
	segs := c.s.Segments
	if !slices.IsSortedFunc(segs, func(a, b Segment) int { return a.Device - b.Device }) {
		slices.SortStableFunc(segs, func(a, b Segment) int { return a.Device - b.Device })
	}
	c.s.byDevice = true
}

// DeviceSegments returns the range [lo, hi) of Segments that holds the
// segments of device: exactly them in a decoded snapshot (the decoder
// groups segments by device), every segment in one built otherwise, so a
// caller still checks Segment.Device. It costs O(log n): a loop over the
// devices that uses it costs what the devices' segments do, not devices
// times segments.
func (s *Snapshot) DeviceSegments(device int) (lo, hi int) {
	if !s.byDevice {
		return 0, len(s.Segments)
	}
	lo = sort.Search(len(s.Segments), func(i int) bool { return s.Segments[i].Device >= device })
	hi = lo + sort.Search(len(s.Segments)-lo, func(i int) bool { return s.Segments[lo+i].Device > device })
	return lo, hi
}
