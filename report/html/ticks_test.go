package html

import (
	"math"
	"testing"
)

// TestHTMLTicksExtreme: htmlTicks gives the interval and top it gave
// before issue 28 for figures that do not overflow, and ends for figures
// near 2^63 (it looped for ever: interval*8 wrapped).
func TestHTMLTicksExtreme(t *testing.T) {
	old := func(hi int64) (int64, int64) {
		interval := int64(1)
		for interval*8 < hi {
			interval *= 2
		}
		return interval, (hi + interval - 1) / interval * interval
	}
	for _, hi := range []int64{1, 7, 8, 9, 100, 4096, 1<<40 + 3, 1 << 50} {
		i, top := htmlTicks(hi)
		if wi, wt := old(hi); i != wi || top != wt {
			t.Errorf("htmlTicks(%d) = %d, %d; want %d, %d", hi, i, top, wi, wt)
		}
	}
	for _, hi := range []int64{1 << 62, math.MaxInt64 - 4096, math.MaxInt64} {
		i, top := htmlTicks(hi)
		if i <= 0 || top < hi {
			t.Errorf("htmlTicks(%d) = %d, %d: want a positive interval and top >= hi", hi, i, top)
		}
	}
}
