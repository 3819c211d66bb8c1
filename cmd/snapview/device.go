package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
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

// choice is the flag as analysis.DeviceChoice, what the views below cmd
// take.
func (f *deviceFlag) choice() analysis.DeviceChoice {
	return analysis.DeviceChoice{Set: f.set, N: f.n}
}

// check returns a usage error when the device asked for is not in s
// (analysis.DeviceChoice.Check).
func (f *deviceFlag) check(s *snapshot.Snapshot) error {
	if err := f.choice().Check(s); err != nil {
		return &usageError{err}
	}
	return nil
}

// pick returns the devices to show: the one asked for, or every device
// with segments or trace entries (device 0 when the file has none).
func (f *deviceFlag) pick(s *snapshot.Snapshot) ([]int, error) {
	if err := f.check(s); err != nil {
		return nil, err
	}
	return f.choice().Pick(s)
}

// hasTrace reports whether device d of s has trace entries.
func hasTrace(s *snapshot.Snapshot, d int) bool {
	return d < len(s.Traces) && len(s.Traces[d]) > 0
}

// joinInts is units.IntList: "0, 1, 2", shortened past 16 numbers.
func joinInts(ns []int) string { return units.IntList(ns) }

// shown returns the first analysis.MaxShownDevices of devs when the user
// did not pick a device with f, with a warning on stderr naming how many
// were left out and how to see another; devs itself otherwise.
func (f *deviceFlag) shown(devs []int, stderr io.Writer, view string) []int {
	devs, notes := f.choice().Shown(devs, view)
	kit.WriteNotes(stderr, notes)
	return devs
}

// maxShownDevices is analysis.MaxShownDevices, the most devices a view
// shows when --device is not given.
const maxShownDevices = analysis.MaxShownDevices
