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

// check returns a usage error when the device asked for is not in s.
func (f *deviceFlag) check(s *snapshot.Snapshot) error {
	if !f.set {
		return nil
	}
	have := s.KnownDevices()
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

// hasTrace reports whether device d of s has trace entries.
func hasTrace(s *snapshot.Snapshot, d int) bool {
	return d < len(s.Traces) && len(s.Traces[d]) > 0
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
