package replay

import "github.com/snapview/snapview/snapshot"

// DeviceTrace returns the trace entries of device, nil when there are none.
func DeviceTrace(s *snapshot.Snapshot, device int) []snapshot.TraceEntry {
	if device < 0 || device >= len(s.Traces) {
		return nil
	}
	return s.Traces[device]
}
