package explain

import (
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// Options says how the findings' settings are simulated.
type Options struct {
	// Whatif is passed to whatif.Analyze: the cap (--limit) or torch's
	// OOM message (--oom-message).
	Whatif whatif.Options
}

// OOMEntries returns the oom entries of a device's trace (nil when none):
// the states [Explain] reads, for a replay to capture in its one pass.
func OOMEntries(trace []snapshot.TraceEntry) []int {
	var out []int
	for i := range trace {
		if trace[i].Action == snapshot.ActionOOM {
			out = append(out, i)
		}
	}
	return out
}

// unsplitMB is the max_split_size_mb tried where fragmentation is the
// cause: the smallest torch accepts (kLargeBuffer, 20 MiB;
// AllocatorConfig's max_split_size_mb parser): no cached block of 20 MiB
// or more is split, so a long-lived allocation cannot pin a cached
// segment with a remainder (the advice of vLLM#41268).
const unsplitMB = 20

// fragmented reports whether f's cause is the cache's fragmentation and
// its setting comes from whatif's best row: an OOM whose pool's cached
// free bytes covered the request, or a reserved gap made of split
// remainders torch cannot release.
func fragmented(f *Finding) bool {
	switch f.Kind {
	case KindOOMFragmentation:
		return true
	case KindReservedGap:
		g, ok := f.Figure("non_releasable_bytes")
		return ok && g.Value > 0
	}
	return false
}

// Unsplit tries the file's settings with max_split_size_mb:20 where
// fragmentation is the cause, with whatif's prediction:
//
//   - each release-blockers finding of d (long-lived blocks pinning partly
//     free segments at an OOM) takes it as its setting: the blockers split
//     cached blocks, which that setting forbids;
//   - an oom-fragmentation finding, or a reserved gap of non-releasable
//     split remainders, takes it in place of whatif's best row
//     (in.Whatif) when whatif's own rule (whatif.Pick: fits over the cap
//     interval, then the lowest peak reserved) prefers it; where it
//     reserves more than the best candidate (no cap: every split refused
//     makes a segment) the finding keeps its setting.
//
// simulate runs whatif.Analyze over the device's replay with the options
// given (the cap of in.Whatif unless opts.Whatif gives one), once for all
// findings. Nothing happens when the file's settings already have
// expandable segments or a max_split_size of 20 MiB or less, or the
// simulation fails.
func Unsplit(in *Input, d *Device, opts Options, simulate func(whatif.Options) (*whatif.Result, error)) {
	r := in.Replay
	if r == nil {
		return
	}
	cfg := r.Config()
	if cfg.ExpandableSegments || cfg.MaxSplitSize <= unsplitMB<<20 {
		return
	}
	cfg.MaxSplitSize = unsplitMB << 20
	var w *whatif.Result
	failed := false
	for k := range d.Findings {
		f := &d.Findings[k]
		release := f.Kind == KindBlockers && f.Mode == "release"
		if !release && (!fragmented(f) || in.Whatif == nil || len(in.Whatif.Rows) == 0) {
			continue
		}
		if w == nil && !failed {
			o := opts.Whatif
			o.Confs = []string{cfg.String()}
			var err error
			if w, err = simulate(o); err != nil || len(w.Rows) < 2 {
				w, failed = nil, true
			}
		}
		if w == nil {
			return
		}
		if !release {
			rows := []whatif.Row{in.Whatif.Rows[0]}
			if b := in.Whatif.Best; b >= 0 && b < len(in.Whatif.Rows) {
				rows = append(rows, in.Whatif.Rows[b])
			}
			rows = append(rows, w.Rows[1])
			if whatif.Pick(rows) != len(rows)-1 {
				continue
			}
		}
		setRow(f, w, 1)
	}
}

// setRow sets f's setting to w's row k, fitting as whatif's verdict over
// the cap interval says: at every cap, from a cap on, or at none.
func setRow(f *Finding, w *whatif.Result, k int) {
	row := &w.Rows[k]
	f.Setting, f.SettingPeak, f.SettingFits, f.SettingFrom, f.SettingFromLow = row.Conf, row.PeakReserved, row.Fits(), 0, 0
	f.SettingFromAbove = false
	v := w.Verdict()
	for _, fit := range v.Settings {
		if fit.Row != k {
			continue
		}
		switch fit.Kind {
		case whatif.FitsAll:
			f.SettingFits = true
		case whatif.FitsFrom:
			f.SettingFits, f.SettingFrom = false, fit.From
			if !fit.FromExact {
				f.SettingFromLow = fit.FromLow
			}
			f.SettingFromAbove = fit.From > v.Hi
		default:
			f.SettingFits = false
		}
	}
}
