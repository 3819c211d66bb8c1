package analysis

import (
	"fmt"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// ShownDevice is the device a one-device view (state) shows of s at the
// moment at when the user names none, and why, in words for a note ("the
// first with an oom entry"): for an oom moment the first device with (at
// least at.N) oom entries; else the first device with a trace, those the
// allocator was used on first (a distributed process's file lists the
// other ranks' devices with a lone snapshot entry); else the first with
// segments. dev is -1 (why "") for a file without a device.
func ShownDevice(s *snapshot.Snapshot, at steps.Moment) (dev int, why string) {
	devs := s.Devices()
	if len(devs) == 0 {
		return -1, ""
	}
	if at.Kind == steps.MomentOOM {
		counts, with := s.OOMCounts()
		for _, d := range with {
			if counts[d] >= at.N {
				return d, "the first with an oom entry"
			}
		}
		if len(with) > 0 {
			return with[0], "the first with an oom entry"
		}
	}
	for _, d := range append(s.UsedDevices(), devs...) {
		if len(replay.DeviceTrace(s, d)) > 0 {
			return d, "the first with a trace"
		}
	}
	return devs[0], "the first with segments"
}

// ShownDeviceNote is ShownDevice with the note a view writes when it
// chose dev of several devices: "showing device 1, the first with an oom
// entry (the file has devices 0, 1): choose another with --device N";
// "" for a file of one device or none.
func ShownDeviceNote(s *snapshot.Snapshot, at steps.Moment) (dev int, note string) {
	dev, why := ShownDevice(s, at)
	if devs := s.Devices(); len(devs) > 1 {
		note = fmt.Sprintf("showing device %d, %s (the file has devices %s): choose another with --device N", dev, why, units.IntList(devs))
	}
	return dev, note
}
