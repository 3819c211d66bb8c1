package analyze

import (
	"fmt"

	"github.com/snapview/snapview/snapshot"
)

// Trust is how far a device's figures can be trusted: Known.Current for
// the figures at dump time (Cur Usage, the segments, live allocations),
// Known.History for everything the replay derives over time (peaks, Tot
// Alloc, Tot Freed, num_ooms, the state at a trace entry, when a block was
// allocated), with Known.Why saying why History is not exact.
type Trust = Known

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
func DecideTrust(s *snapshot.Snapshot, device int, r *Result, err error) Trust {
	t := Trust{Current: Exact, NumAllocRetries: Unknown}
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
		why := "the replayed end state differs from the file's segments"
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
