package report

import "github.com/snapview/snapview/snapshot"

// deviceTrace returns the trace entries of device (nil: none).
func deviceTrace(s *snapshot.Snapshot, device int) []snapshot.TraceEntry {
	if device >= 0 && device < len(s.Traces) {
		return s.Traces[device]
	}
	return nil
}
