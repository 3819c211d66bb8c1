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

// Run explains one device of s: it replays the device once (taking the
// states at every oom entry in that pass, and the state at the reserved
// peak when there is a reserved gap),
// ranks leaks at their default moment, simulates other settings only when
// the device has an OOM or a reserved gap ([NeedsWhatif]), and reads the
// recording's coverage. It returns the replay's errors.
func Run(s *snapshot.Snapshot, device int, opts Options) (*Device, error) {
	in := Input{Snap: s}
	tr := trace(s, device)
	replayed := map[int]analyze.DeviceReplay{}
	if len(tr) > 0 {
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
		replayed[device] = analyze.DeviceReplay{Result: r}
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
	}
	info := analyze.InspectDevices(s, replayed, []int{device})
	in.Recording = &info.Recording
	if len(info.Devices) > 0 {
		in.Coverage = &info.Devices[0]
	}
	d := Explain(in)
	d.Device = device
	return d, nil
}
