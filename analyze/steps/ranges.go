package steps

import "github.com/snapview/snapview/snapshot"

// Range is one record_function range of a device (a torch.profiler or
// torch.autograd.profiler.record_function block, recorded in
// snapshot["external_annotations"] as START and END entries).
type Range struct {
	Name           string
	StartUS, EndUS int64 // microseconds since the Unix epoch
	// Open is true when the file has no END for the START: EndUS is then
	// the end given to Ranges.
	Open bool
}

// Ranges pairs the external_annotations START and END entries of device
// (each END closes the latest open START of its name), in START order; a
// START without END ends at endUS. An END without START is dropped.
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
