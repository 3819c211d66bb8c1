package stats

import (
	"fmt"
	"slices"

	"github.com/snapview/snapview/snapshot"
)

// Trust is how far a device's figures can be trusted: Known.Current for
// the figures at dump time (Cur Usage, the segments, live allocations),
// Known.History for everything the replay derives over time (peaks, Tot
// Alloc, Tot Freed, num_ooms, the state at a trace entry, when a block was
// allocated), with Known.Why saying why History is not exact.
type Trust = Known

// RequestedTrust is the Requested half of [DecideTrust] for one device:
// Exact, or Unknown with the reason (a sentence without its full stop).
// It reads the device's segments, one pass over their blocks.
func RequestedTrust(s *snapshot.Snapshot, device int) (Exactness, string) {
	var over int
	var first string
	lo, hi := s.DeviceSegments(device)
	for i := lo; i < hi; i++ {
		seg := &s.Segments[i]
		if seg.Device != device {
			continue
		}
		for j := range seg.Blocks {
			if b := &seg.Blocks[j]; b.State.Active() && b.RequestedSize > b.Size {
				if over++; over == 1 {
					first = fmt.Sprintf("%d bytes of the %d-byte block at %v", b.RequestedSize, b.Size, b.Address)
				}
			}
		}
	}
	switch {
	case over > 0:
		n := "1 active block requests more bytes than it holds"
		if over > 1 {
			n = fmt.Sprintf("%d active blocks request more bytes than they hold", over)
		}
		return Unknown, fmt.Sprintf("%s, %s, where PyTorch rounds a request up, never down", n, first)
	case slices.Contains(s.NoRequestedSize, device):
		return Unknown, "the file gives no requested_size for some active blocks, so their size stands in for the request"
	}
	return Exact, ""
}
