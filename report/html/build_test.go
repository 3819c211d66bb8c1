package html

import (
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestBusiestDevices: a report of more devices than MaxDevices keeps the
// busiest, in device order.
func TestBusiestDevices(t *testing.T) {
	s := &snapshot.Snapshot{
		Traces:   [][]snapshot.TraceEntry{make([]snapshot.TraceEntry, 1), make([]snapshot.TraceEntry, 5), nil, make([]snapshot.TraceEntry, 3)},
		Segments: []snapshot.Segment{{Device: 2, Blocks: make([]snapshot.Block, 4)}},
	}
	got := busiestDevices(s, []int{0, 1, 2, 3}, 2)
	if len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("busiestDevices = %v, want [1 2]", got)
	}
	if got := busiestDevices(s, []int{0, 3}, 2); len(got) != 2 {
		t.Errorf("busiestDevices under the cap = %v", got)
	}
}
