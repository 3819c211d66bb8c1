package snapshot

import "testing"

// TestDeviceSegments: the decoder groups segments by device (file order
// within one), and DeviceSegments finds each device's range; a snapshot
// built by hand gets every segment.
func TestDeviceSegments(t *testing.T) {
	c := newConverter()
	c.s.Segments = []Segment{{Device: 2, Address: 1}, {Device: 0, Address: 2}, {Device: 2, Address: 3}, {Device: 1, Address: 4}}
	c.groupByDevice()
	var got []Addr
	for _, s := range c.s.Segments {
		got = append(got, s.Address)
	}
	if want := []Addr{2, 4, 1, 3}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("order %v, want %v", got, want)
	}
	for _, tt := range []struct{ dev, lo, hi int }{{0, 0, 1}, {1, 1, 2}, {2, 2, 4}, {3, 4, 4}, {-1, 0, 0}} {
		if lo, hi := c.s.DeviceSegments(tt.dev); lo != tt.lo || hi != tt.hi {
			t.Errorf("DeviceSegments(%d) = %d, %d; want %d, %d", tt.dev, lo, hi, tt.lo, tt.hi)
		}
	}
	byHand := &Snapshot{Segments: make([]Segment, 3)}
	if lo, hi := byHand.DeviceSegments(0); lo != 0 || hi != 3 {
		t.Errorf("by hand: %d, %d", lo, hi)
	}
}
