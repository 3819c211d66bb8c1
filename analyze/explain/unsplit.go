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

// unsplitMB is the max_split_size_mb tried against release blockers: the
// smallest torch accepts (kLargeBuffer, 20 MiB; AllocatorConfig's
// max_split_size_mb parser): no cached block of 20 MiB or more is split,
// so a long-lived allocation cannot pin a cached segment with a remainder
// (the advice of vLLM#41268).
const unsplitMB = 20

// Unsplit gives each release-blockers finding of d (long-lived blocks
// pinning partly free segments at an OOM) the file's settings with
// max_split_size_mb:20 as its setting, with whatif's prediction: the
// blockers split cached blocks, which that setting forbids. simulate runs
// whatif.Analyze over the device's replay with the options given (the cap
// of in.Whatif unless opts.Whatif gives one). Nothing happens when the
// file's settings already have expandable segments or a max_split_size of
// 20 MiB or less, or the simulation fails.
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
	for k := range d.Findings {
		f := &d.Findings[k]
		if f.Kind != KindBlockers || f.Mode != "release" {
			continue
		}
		if w == nil {
			o := opts.Whatif
			o.Confs = []string{cfg.String()}
			var err error
			if w, err = simulate(o); err != nil || len(w.Rows) < 2 {
				return
			}
		}
		row := &w.Rows[1]
		f.Setting, f.SettingPeak, f.SettingFits = row.Conf, row.PeakReserved, row.Fits()
		// Over the cap interval (whatif.Verdict): it fits at every cap,
		// from a cap on, or at none.
		if v := w.Verdict(); len(v.Settings) > 0 {
			switch fit := v.Settings[0]; fit.Kind {
			case whatif.FitsAll:
				f.SettingFits = true
			case whatif.FitsFrom:
				f.SettingFits, f.SettingFrom = false, fit.From
			default:
				f.SettingFits = false
			}
		}
	}
}
