package explain

import (
	"github.com/snapview/snapview/analyze"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// Options says how [Run] runs the analyses it reads.
type Options struct {
	// Whatif is passed to whatif.Analyze (the cap, from --limit).
	Whatif whatif.Options
}

// Run explains one device of s (see [RunDevices]).
func Run(s *snapshot.Snapshot, device int, opts Options) (*Device, error) {
	ds, err := RunDevices(s, []int{device}, opts)
	if err != nil {
		return nil, err
	}
	return ds[0], nil
}

// RunDevices explains the given devices of s, in that order. Per device it
// replays once (taking the states at every oom entry in that pass, and the
// state at the reserved peak when there is a reserved gap), ranks leaks
// at their default moment, and simulates other settings only when the
// device has an OOM or a reserved gap ([NeedsWhatif]); the recording's
// inference (info's) is made once for the file, with those replays. It
// returns the first replay error.
func RunDevices(s *snapshot.Snapshot, devices []int, opts Options) ([]*Device, error) {
	ins := map[int]*Input{}
	var firstErr error
	info := analyze.InspectReplaying(s, func(device int) (analyze.DeviceReplay, bool) {
		in, err := prepare(s, device, opts)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			return analyze.DeviceReplay{Err: err}, true
		}
		ins[device] = in
		return analyze.DeviceReplay{Result: in.Replay}, true
	}, devices)
	if firstErr != nil {
		return nil, firstErr
	}
	out := make([]*Device, 0, len(devices))
	for _, d := range devices {
		in := ins[d]
		if in == nil {
			in = &Input{Snap: s}
		}
		in.Recording = &info.Recording
		for k := range info.Devices {
			if info.Devices[k].Device == d {
				in.Coverage = &info.Devices[k]
			}
		}
		e := Explain(*in)
		e.Device = d
		unsplit(in, e, opts)
		out = append(out, e)
	}
	return out, nil
}

// prepare runs the analyses of one device with a trace.
func prepare(s *snapshot.Snapshot, device int, opts Options) (*Input, error) {
	in := &Input{Snap: s}
	tr := trace(s, device)
	var ooms []int
	for i := range tr {
		if tr[i].Action == snapshot.ActionOOM {
			ooms = append(ooms, i)
		}
	}
	r, states, err := analyze.ReplayWith(s, device, analyze.ReplayOptions{States: ooms})
	if err != nil {
		return nil, err
	}
	in.Replay = r
	for _, st := range states {
		if st.Entry != nil && st.Entry.Action == snapshot.ActionOOM {
			in.OOMStates = append(in.OOMStates, st)
		}
	}
	if _, gap := reservedGap(r); gap {
		// The state at the reserved peak, only when the gap finding
		// reads it.
		if st, err := r.StateAt(r.PeakReservedIndex); err == nil {
			in.PeakState = st
		}
	}
	if rep, err := analyze.Leaks(s, r, analyze.DefaultLeakOptions(r)); err == nil {
		in.Leaks = rep
	}
	if NeedsWhatif(r) {
		if w, err := whatif.Analyze(s, device, r, opts.Whatif); err == nil {
			in.Whatif = w
		}
	}
	return in, nil
}

// unsplitMB is the max_split_size_mb tried against release blockers: the
// smallest torch accepts (kLargeBuffer, 20 MiB; AllocatorConfig's
// max_split_size_mb parser): no cached block of 20 MiB or more is split,
// so a long-lived allocation cannot pin a cached segment with a remainder
// (the advice of vLLM#41268).
const unsplitMB = 20

// unsplit simulates, for each release-blockers finding of e (long-lived
// blocks pinning partly free segments at an OOM), the file's settings with
// max_split_size_mb:20, and makes it the finding's setting with whatif's
// prediction: the blockers split cached blocks, which that setting forbids.
func unsplit(in *Input, e *Device, opts Options) {
	r := in.Replay
	if r == nil {
		return
	}
	cfg := r.Config()
	if cfg.ExpandableSegments || cfg.MaxSplitSize <= unsplitMB<<20 {
		return
	}
	cfg.MaxSplitSize = unsplitMB << 20
	conf := cfg.String()
	var w *whatif.Result
	for k := range e.Findings {
		f := &e.Findings[k]
		if f.Kind != KindBlockers || f.Mode != "release" {
			continue
		}
		if w == nil {
			o := opts.Whatif
			if in.Whatif != nil && o.Limit == 0 {
				o.Limit = in.Whatif.Limit
			}
			o.Confs = []string{conf}
			var err error
			if w, err = whatif.Analyze(in.Snap, r.Device, r, o); err != nil || len(w.Rows) < 2 {
				return
			}
		}
		row := &w.Rows[1]
		f.Setting, f.SettingPeak, f.SettingFits = row.Conf, row.PeakReserved, row.Fits()
	}
}
