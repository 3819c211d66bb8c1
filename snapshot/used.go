package snapshot

import "slices"

// KnownDevices are the devices of s: those with segments or trace entries
// (Devices), and those device_traces lists with an empty trace, in order.
func (s *Snapshot) KnownDevices() []int {
	devs := s.Devices()
	seen := make(map[int]bool, len(devs))
	for _, d := range devs {
		seen[d] = true
	}
	for d := range s.Traces {
		if !seen[d] {
			devs = append(devs, d)
		}
	}
	slices.Sort(devs)
	return devs
}

// UsedDevices are the devices of s the allocator did something on: with
// segments, or with trace entries other than the snapshot marker (a
// distributed process's file lists the other ranks' devices with a lone
// snapshot entry).
func (s *Snapshot) UsedDevices() []int {
	var out []int
	for _, d := range s.Devices() {
		lo, hi := s.DeviceSegments(d)
		used := slices.ContainsFunc(s.Segments[lo:hi], func(sg Segment) bool { return sg.Device == d })
		if d < len(s.Traces) && !used {
			used = slices.ContainsFunc(s.Traces[d], func(e TraceEntry) bool { return e.Action != ActionSnapshot })
		}
		if used {
			out = append(out, d)
		}
	}
	return out
}

// IdleDevices are the devices of s the allocator was never used on (see
// UsedDevices): in order, nil when every device was used or none was.
func (s *Snapshot) IdleDevices() []int {
	used := s.UsedDevices()
	if len(used) == 0 {
		return nil
	}
	isUsed := make(map[int]bool, len(used))
	for _, d := range used {
		isUsed[d] = true
	}
	var idle []int
	for _, d := range s.Devices() {
		if !isUsed[d] {
			idle = append(idle, d)
		}
	}
	return idle
}

// OOMCounts returns the number of oom entries of each device of s that
// has one, and those devices in order.
func (s *Snapshot) OOMCounts() (map[int]int, []int) {
	counts := map[int]int{}
	var devs []int
	for d, trace := range s.Traces {
		for i := range trace {
			if trace[i].Action == ActionOOM {
				counts[d]++
			}
		}
		if counts[d] > 0 {
			devs = append(devs, d)
		}
	}
	return counts, devs
}
