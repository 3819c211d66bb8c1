package info

import "github.com/snapview/snapview/snapshot"

// actionTally counts trace entries by action: an array indexed by the
// one-byte Action, cheaper than a map in the passes over millions of
// entries.
type actionTally [256]int

// counts returns the non-zero counts as actionCounts does, by action.
func (t *actionTally) counts(s *snapshot.Snapshot) []snapshot.Count {
	out := []snapshot.Count{}
	for a, n := range t {
		if n > 0 {
			out = append(out, snapshot.Count{Name: s.ActionName(snapshot.Action(a)), Count: n})
		}
	}
	return out
}
