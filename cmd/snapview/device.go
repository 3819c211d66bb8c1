package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// deviceFlag is the -d/--device flag of every command that has devices: a
// CUDA device ordinal, or unset. A negative ordinal is refused when the
// flag is parsed (a usage error), so unset is the only "no device" value.
type deviceFlag struct {
	set bool
	n   int
}

// addDeviceFlag adds -d/--device to fs. unset says what the command does
// without it ("every device in the file"); help prints it once, as
// "(default: UNSET)".
func addDeviceFlag(fs *pflag.FlagSet, f *deviceFlag, what, unset string) {
	fs.VarP(f, "device", "d", what+" (default: "+unset+")")
}

// String is "" when unset, so that help prints no second default.
func (f *deviceFlag) String() string {
	if !f.set {
		return ""
	}
	return strconv.Itoa(f.n)
}

func (f *deviceFlag) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("want a device ordinal (0, 1, …), got %q", v)
	}
	f.set, f.n = true, n
	return nil
}

func (f *deviceFlag) Type() string { return "N" }

// knownDevices are the devices of s: those with segments or trace
// entries, and those device_traces lists with an empty trace.
func knownDevices(s *snapshot.Snapshot) []int {
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

// check returns a usage error when the device asked for is not in s.
func (f *deviceFlag) check(s *snapshot.Snapshot) error {
	if !f.set {
		return nil
	}
	have := knownDevices(s)
	if slices.Contains(have, f.n) {
		return nil
	}
	if len(have) == 0 {
		return usageErrorf("--device %d: the snapshot has no device %d (it holds no device)", f.n, f.n)
	}
	return usageErrorf("--device %d: the snapshot has no device %d (devices: %s)", f.n, f.n, joinInts(have))
}

// pick returns the devices to show: the one asked for, or every device
// with segments or trace entries (device 0 when the file has none).
func (f *deviceFlag) pick(s *snapshot.Snapshot) ([]int, error) {
	if err := f.check(s); err != nil {
		return nil, err
	}
	if f.set {
		return []int{f.n}, nil
	}
	if have := s.Devices(); len(have) > 0 {
		return have, nil
	}
	return []int{0}, nil
}

// usedDevices are the devices of s the allocator did something on: with
// segments, or with trace entries other than the snapshot marker (a
// distributed process's file lists the other ranks' devices with a lone
// snapshot entry).
func usedDevices(s *snapshot.Snapshot) []int {
	var out []int
	for _, d := range s.Devices() {
		lo, hi := s.DeviceSegments(d)
		used := slices.ContainsFunc(s.Segments[lo:hi], func(sg snapshot.Segment) bool { return sg.Device == d })
		if d < len(s.Traces) && !used {
			used = slices.ContainsFunc(s.Traces[d], func(e snapshot.TraceEntry) bool { return e.Action != snapshot.ActionSnapshot })
		}
		if used {
			out = append(out, d)
		}
	}
	return out
}

// idleDevices are the devices of s the allocator was never used on (see
// usedDevices): in order, nil when every device was used or none was.
func idleDevices(s *snapshot.Snapshot) []int {
	used := usedDevices(s)
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

// hasTrace reports whether device d of s has trace entries.
func hasTrace(s *snapshot.Snapshot, d int) bool {
	return d < len(s.Traces) && len(s.Traces[d]) > 0
}

// oomCounts returns the number of oom entries of each device of s that
// has one, and those devices in order.
func oomCounts(s *snapshot.Snapshot) (map[int]int, []int) {
	counts := map[int]int{}
	var devs []int
	for d, trace := range s.Traces {
		for i := range trace {
			if trace[i].Action == snapshot.ActionOOM {
				counts[d]++
			}
		}
		if counts[d] > 0 {
			devs = append(devs, d)
		}
	}
	return counts, devs
}

// joinInts is units.IntList: "0, 1, 2", shortened past 16 numbers.
func joinInts(ns []int) string { return units.IntList(ns) }

// maxShownDevices is the most devices a view shows when --device is not
// given, as the report draws at most report's 64: a file of 100,000
// devices (a hostile or broken one) would otherwise print 100,000 sections.
const maxShownDevices = 64

// shown returns the first maxShownDevices of devs when the user did not
// pick a device with f, with a warning on stderr naming how many were left
// out and how to see another; devs itself otherwise.
func (f *deviceFlag) shown(devs []int, stderr io.Writer, view string) []int {
	if f.set || len(devs) <= maxShownDevices {
		return devs
	}
	fmt.Fprintf(stderr, "warning: %s of the file's %s devices are left out of %s (over %d, the most it shows: %s); --device N shows another\n",
		units.Int(len(devs)-maxShownDevices), units.Int(len(devs)), view, maxShownDevices,
		joinInts(devs[:maxShownDevices]))
	return devs[:maxShownDevices]
}
