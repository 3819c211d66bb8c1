package analyze

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

// EndStateDiffers is why History is Unknown when a replay does not end in
// the file's segments (Result.Check not Equal); the commands warn with
// the same words.
const EndStateDiffers = "the replayed end state differs from the file's segments"

// DecideTrust is the one trust rule, decided once per device; every view
// takes its marks from it (through Result.Stats.Known). In order:
//
//   - no trace entries: History Unknown (nothing to replay);
//   - the replay failed (err): History Unknown;
//   - the file's blocks fit no known rounding rule (InferRounding):
//     History Unknown, as the replay cannot size the blocks;
//   - the segments came from the trace (Complete: the file had none):
//     Current and History LowerBound, as the end state cannot be checked
//     and the trace may miss the start;
//   - the replayed end state differs from the file's segments
//     (Result.Check), or the replay's current figures differ from the
//     segments': History Unknown;
//   - the replay had to seed blocks older than the trace (Result.Seeded):
//     History LowerBound;
//   - otherwise History Exact.
//
// Current is Exact but for segments rebuilt from a trace. NumOOMs follows
// History; NumAllocRetries is a lower bound with a trace, unknown without.
//
// Requested (the requested sizes the file gives, and every figure summed
// from them) is Unknown, with RequestedWhy, when the device's requested
// sizes cannot be right:
//
//   - an active block requests more bytes than it holds: PyTorch's
//     caching allocator rounds a request up to the block size, never down
//     (c10/cuda/CUDACachingAllocator.cpp, round_size and
//     get_allocation_size), so requested_size <= size for every active
//     block;
//   - an active block carries no requested size (no requested_size, no
//     PyTorch 2.0 history[0].real_size: snapshot.Snapshot.NoRequestedSize),
//     so the decoder took its size, an upper bound.
//
// Otherwise Requested is Exact, and each requested figure is as exact as
// its column (Known.RequestedCurrent, Known.RequestedHistory). The
// verdict reads the file's segments only ([RequestedTrust]), so views that
// make no replay (segments) reach the same one. A file whose requested
// sizes disagree with its trace's requests already has History Unknown
// (Result.Check).
func DecideTrust(s *snapshot.Snapshot, device int, r *Result, err error) Trust {
	t := Trust{Current: Exact, NumAllocRetries: Unknown}
	t.Requested, t.RequestedWhy = RequestedTrust(s, device)
	set := func(e Exactness, why string) Trust {
		t.History, t.NumOOMs, t.Why = e, e, why
		if e != Unknown {
			t.NumAllocRetries = LowerBound
		}
		return t
	}
	if s.SegmentsFromTrace {
		t.Current = LowerBound
	}
	t.Seeded = r != nil && r.Seeded
	switch {
	case len(deviceTrace(s, device)) == 0 && len(s.HostTraces) > 0:
		return set(Unknown, "no trace entries for this device: the file records pinned host memory only")
	case len(deviceTrace(s, device)) == 0:
		return set(Unknown, "no trace entries: the file holds the state at the dump only (record with torch.cuda.memory._record_memory_history)")
	case err != nil:
		return set(Unknown, "the replay failed: "+err.Error())
	case r.Rounding.Rule == RoundUnknown:
		return set(Unknown, "the allocator's rounding is unknown ("+r.Rounding.Evidence()+")")
	case s.SegmentsFromTrace:
		return set(LowerBound, "the file has no segments: the end state comes from the trace alone and cannot be checked")
	case !r.Check.Equal:
		why := EndStateDiffers
		if len(r.Check.Differences) > 0 {
			why += " (" + r.Check.Differences[0] + ")"
		}
		return set(Unknown, why)
	}
	if d := currentDiff(CurrentStats(s, device), &r.Stats); d != "" {
		return set(Unknown, "the replay's current figures differ from the segments' ("+d+")")
	}
	if r.Seeded {
		return set(LowerBound, "the trace misses the start of the run (recording started late, or the ring buffer wrapped)")
	}
	return set(Exact, "")
}

// currentDiff names the first current figure where a and b differ, ""
// when they agree.
func currentDiff(a, b *MemoryStats) string {
	fb := b.Figures()
	for i, f := range a.Figures() {
		if len(f.Key) > 8 && f.Key[len(f.Key)-8:] == ".current" && f.Value != fb[i].Value {
			return fmt.Sprintf("%s: %d vs %d", f.Key, f.Value, fb[i].Value)
		}
	}
	return ""
}

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
