package snapshot

import (
	"slices"
	"testing"
)

// TestUsedDevices: device 0 has a segment, device 1 only the snapshot
// marker another rank's device gets, device 2 an alloc and two ooms,
// device 3 an empty trace: used 0 and 2, idle 1, known 0 to 3.
func TestUsedDevices(t *testing.T) {
	s := &Snapshot{
		Segments: []Segment{{Device: 0}},
		Traces: [][]TraceEntry{
			nil,
			{{Action: ActionSnapshot}},
			{{Action: ActionAlloc}, {Action: ActionOOM}, {Action: ActionOOM}},
			{},
		},
	}
	if got := s.UsedDevices(); !slices.Equal(got, []int{0, 2}) {
		t.Errorf("UsedDevices = %v, want [0 2]", got)
	}
	if got := s.IdleDevices(); !slices.Equal(got, []int{1}) {
		t.Errorf("IdleDevices = %v, want [1]", got)
	}
	if got := s.KnownDevices(); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("KnownDevices = %v, want [0 1 2 3]", got)
	}
	counts, devs := s.OOMCounts()
	if !slices.Equal(devs, []int{2}) || counts[2] != 2 || len(counts) != 1 && counts[0]+counts[1]+counts[3] != 0 {
		t.Errorf("OOMCounts = %v, %v; want device 2 with 2", counts, devs)
	}
}
