package analysis

import (
	"fmt"
	"slices"

	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// DeviceChoice is the device a command's --device flag names: a CUDA
// device ordinal N when Set, else none (the view's own default).
type DeviceChoice struct {
	Set bool
	N   int
}

// Check returns a *UsageError when the device asked for is not in s.
func (c DeviceChoice) Check(s *snapshot.Snapshot) error {
	if !c.Set {
		return nil
	}
	have := s.KnownDevices()
	if slices.Contains(have, c.N) {
		return nil
	}
	if len(have) == 0 {
		return UsageErrorf("--device %d: the snapshot has no device %d (it holds no device)", c.N, c.N)
	}
	return UsageErrorf("--device %d: the snapshot has no device %d (devices: %s)", c.N, c.N, units.IntList(have))
}

// Pick returns the devices a view of every device shows: the one asked
// for, or every device with segments or trace entries (device 0 when the
// file has none). Its error is Check's.
func (c DeviceChoice) Pick(s *snapshot.Snapshot) ([]int, error) {
	if err := c.Check(s); err != nil {
		return nil, err
	}
	if c.Set {
		return []int{c.N}, nil
	}
	if have := s.Devices(); len(have) > 0 {
		return have, nil
	}
	return []int{0}, nil
}

// One returns the device a one-device view (state, diff) shows at the
// moment at: the one asked for, else ShownDeviceNote's, with its note
// naming the others when the file has several. Its error is Check's.
func (c DeviceChoice) One(s *snapshot.Snapshot, at steps.Moment) (dev int, note string, err error) {
	if c.Set {
		return c.N, "", c.Check(s)
	}
	dev, note = ShownDeviceNote(s, at)
	return dev, note, nil
}

// MaxShownDevices is the most devices a view shows when no device is
// chosen, as the report draws at most its 64: a file of 100,000 devices
// (a hostile or broken one) would otherwise print 100,000 sections.
const MaxShownDevices = 64

// Shown returns the first MaxShownDevices of devs when no device is
// chosen, with a warning naming how many view leaves out and how to see
// another; devs itself otherwise.
func (c DeviceChoice) Shown(devs []int, view string) ([]int, []Note) {
	if c.Set || len(devs) <= MaxShownDevices {
		return devs, nil
	}
	return devs[:MaxShownDevices], []Note{{Kind: Warning, Text: fmt.Sprintf("%s of the file's %s devices are left out of %s (over %d, the most it shows: %s); --device N shows another",
		units.Int(len(devs)-MaxShownDevices), units.Int(len(devs)), view, MaxShownDevices,
		units.IntList(devs[:MaxShownDevices]))}}
}
