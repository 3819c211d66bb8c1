package steps

import (
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// Range is one record_function range of a device (a torch.profiler or
// torch.autograd.profiler.record_function block, recorded in
// snapshot["external_annotations"] as START and END entries).
type Range struct {
	Name           string
	StartUS, EndUS int64 // microseconds since the Unix epoch
	// Open is true when the file has no END for the START: EndUS is then
	// the end given to Ranges.
	Open bool
	// Unstarted is true when the file has no START for the END: the range
	// was open when the recording began (_record_memory_history installs
	// its record_function callback inside it), and StartUS is the device's
	// first trace entry's time (the END's time when that is later, or
	// when the trace has no time_us).
	Unstarted bool
}

// Ranges pairs the external_annotations START and END entries of device
// (each END closes the latest open START of its name), in START order; a
// START without END ends at endUS. An END without START is a range open
// since before the recording began: it starts at the device's first trace
// entry (Unstarted), in the order of its END among the STARTs. Every view
// that shows ranges (the page's timeline, the exports, the ranges open at
// an entry) takes them from here.
func Ranges(s *snapshot.Snapshot, device int, endUS int64) []Range {
	var out []Range
	open := map[string][]int{}
	for _, a := range s.Annotations {
		if a.Device != device {
			continue
		}
		switch a.Stage {
		case "START":
			open[a.Name] = append(open[a.Name], len(out))
			out = append(out, Range{Name: a.Name, StartUS: a.TimeUS, EndUS: endUS, Open: true})
		case "END":
			st := open[a.Name]
			if len(st) == 0 {
				out = append(out, Range{Name: a.Name, StartUS: recordingStart(s, device, a.TimeUS), EndUS: a.TimeUS, Unstarted: true})
				continue
			}
			k := st[len(st)-1]
			open[a.Name] = st[:len(st)-1]
			out[k].EndUS, out[k].Open = max(a.TimeUS, out[k].StartUS), false
		}
	}
	for i := range out {
		if out[i].Open {
			out[i].EndUS = max(out[i].EndUS, out[i].StartUS)
		}
	}
	return out
}

// recordingStart is when the recording of device began as its trace shows
// it: its first entry's time_us, or end when that is earlier or the trace
// has no time_us.
func recordingStart(s *snapshot.Snapshot, device int, end int64) int64 {
	tr := replay.DeviceTrace(s, device)
	if len(tr) == 0 || tr[0].Flags&snapshot.FlagTime == 0 {
		return end
	}
	return min(tr[0].TimeUS, end)
}

// Contains reports whether the range is open at time t (microseconds):
// START <= t < END, an unterminated range up to its end inclusive.
func (r *Range) Contains(t int64) bool {
	return r.StartUS <= t && (t < r.EndUS || (r.Open && t <= r.EndUS))
}

// OpenAt returns the names of the ranges of device open at time t
// (microseconds), outermost (earliest START) first; endUS ends the
// unterminated ones, as in Ranges.
func OpenAt(s *snapshot.Snapshot, device int, t, endUS int64) []string {
	var out []string
	for _, r := range Ranges(s, device, endUS) {
		if r.Contains(t) {
			out = append(out, r.Name)
		}
	}
	return out
}
