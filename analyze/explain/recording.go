package explain

import (
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/stats"
)

// recordingFinding is the recording's trust verdict (replay.DecideTrust,
// as every view marks it) with the _record_memory_history arguments that
// would make the file complete, none that the file already shows
// (info's inference, info.Recording):
//
//   - a wrapped ring buffer: max_entries above the run's event count; the
//     trace holds exactly max_entries entries, so at least 10 times that
//     is suggested (the run's count is not in the file);
//   - a late start: call it before the first CUDA allocation;
//   - no trace (enabled="state", or recording off): enabled="all";
//   - no stacks on trace entries: context="all" (and stacks="python" when
//     the file shows no frames at all).
func recordingFinding(in Input) (Finding, bool) {
	cov := in.Coverage
	if cov == nil {
		return Finding{}, false
	}
	f := Finding{Kind: KindRecording, Severity: SeverityInfo, Entry: -1}
	k := cov.Trust
	if in.Replay != nil {
		k = in.Replay.Stats.Known
	}
	f.Trust = k
	f.add("entries", int64(cov.Entries), Entries, stats.Exact)
	switch cov.Coverage {
	case info.CoverageWrapped:
		f.MaxEntries = 10 * cov.Entries
		f.add("untraced_blocks", int64(cov.UntracedBlocks), Count, stats.Exact)
		f.add("orphan_frees", int64(cov.OrphanFrees), Count, stats.Exact)
	case info.CoverageLate, info.CoverageWindow:
		f.StartEarly = true
		f.add("untraced_blocks", int64(cov.UntracedBlocks), Count, stats.Exact)
		f.add("orphan_frees", int64(cov.OrphanFrees), Count, stats.Exact)
	case info.CoverageNone, info.CoverageStateOnly:
		f.EnableAll = true
	}
	if rec := in.Recording; rec != nil && cov.Entries > 0 {
		switch rec.Context {
		case info.ContextNone, info.ContextState, info.ContextNoneOrState:
			f.ContextAll = true
		}
	}
	if k.History != stats.Exact || f.MaxEntries > 0 || f.StartEarly || f.EnableAll || f.ContextAll {
		f.Severity = SeverityWarning
	}
	f.Coverage = string(cov.Coverage)
	return f, true
}
