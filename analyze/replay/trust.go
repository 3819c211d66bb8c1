package replay

import (
	"fmt"
	"github.com/snapview/snapview/analyze/allocator"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// EndStateDiffers is why History is Unknown when a replay does not end in
// the file's segments (Result.Check not Equal); the commands warn with
// the same words.
const EndStateDiffers = "the replayed end state differs from the file's segments"

// DecideTrust is the one trust rule, decided once per device; every view
// takes its marks from it (through Result.Stats.Known). In order:
//
//   - no trace entries: History Unknown (nothing to replay);
//   - the replay failed (err): History Unknown;
//   - the file's blocks fit no known rounding rule (allocator.InferRounding):
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
// History; NumAllocRetries is unknown without a trace, and with one a
// lower bound (the OOMs), bounded from above too when History is Exact
// (MemoryStats.RetriesRange: the OOMs plus the segment_alloc and
// segment_map entries that directly follow a release), and Exact when
// the two bounds meet.
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
func DecideTrust(s *snapshot.Snapshot, device int, r *Result, err error) stats.Trust {
	t := stats.Trust{Current: stats.Exact, NumAllocRetries: stats.Unknown}
	t.Requested, t.RequestedWhy = stats.RequestedTrust(s, device)
	set := func(e stats.Exactness, why string) stats.Trust {
		t.History, t.NumOOMs, t.Why = e, e, why
		if e != stats.Unknown {
			t.NumAllocRetries = stats.LowerBound
		}
		return t
	}
	if s.SegmentsFromTrace {
		t.Current = stats.LowerBound
	}
	t.Seeded = r != nil && r.Seeded
	switch {
	case len(DeviceTrace(s, device)) == 0 && len(s.HostTraces) > 0:
		return set(stats.Unknown, "no trace entries for this device: the file records pinned host memory only")
	case len(DeviceTrace(s, device)) == 0:
		return set(stats.Unknown, "no trace entries: the file holds the state at the dump only (record with torch.cuda.memory._record_memory_history)")
	case err != nil:
		return set(stats.Unknown, "the replay failed: "+err.Error())
	case r.Rounding.Rule == allocator.RoundUnknown:
		return set(stats.Unknown, "the allocator's rounding is unknown ("+r.Rounding.Evidence()+")")
	case s.SegmentsFromTrace:
		return set(stats.LowerBound, "the file has no segments: the end state comes from the trace alone and cannot be checked")
	case !r.Check.Equal:
		why := EndStateDiffers
		if len(r.Check.Differences) > 0 {
			why += " (" + r.Check.Differences[0] + ")"
		}
		return set(stats.Unknown, why)
	}
	if d := currentDiff(stats.CurrentStats(s, device), &r.Stats); d != "" {
		return set(stats.Unknown, "the replay's current figures differ from the segments' ("+d+")")
	}
	if r.Seeded {
		return set(stats.LowerBound, "the trace misses the start of the run (recording started late, or the ring buffer wrapped)")
	}
	t = set(stats.Exact, "")
	if r.Stats.NumAllocRetriesMax == r.Stats.NumAllocRetries {
		// No segment_alloc or segment_map follows a release directly: no
		// retry can have succeeded, and each that failed is an oom entry.
		t.NumAllocRetries = stats.Exact
	}
	return t
}

// currentDiff names the first current figure where a and b differ, ""
// when they agree.
func currentDiff(a, b *stats.MemoryStats) string {
	fb := b.Figures()
	for i, f := range a.Figures() {
		if len(f.Key) > 8 && f.Key[len(f.Key)-8:] == ".current" && f.Value != fb[i].Value {
			return fmt.Sprintf("%s: %d vs %d", f.Key, f.Value, fb[i].Value)
		}
	}
	return ""
}
