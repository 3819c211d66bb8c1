package allocator

import (
	"testing"

	"github.com/snapview/snapview/snapshot"
)

func TestDivisionsText(t *testing.T) {
	all := func(v int64) map[int64]int64 {
		m := map[int64]int64{}
		for i := range roundupIntervals {
			m[int64(1)<<i] = v
		}
		return m
	}
	mixed := all(8)
	for k := int64(1); k <= 256; k *= 2 {
		mixed[k] = 1
	}
	mixed[512] = 2
	for _, tt := range []struct {
		m    map[int64]int64
		want string
	}{
		{all(0), "0"},
		{all(4), "4"},
		{mixed, "[256:1,512:2,>:8]"},
	} {
		if got := DivisionsText(tt.m); got != tt.want {
			t.Errorf("DivisionsText(%v) = %q, want %q", tt.m, got, tt.want)
		}
	}
	// It parses back to the same divisions.
	c, err := Parse("roundup_power2_divisions:" + DivisionsText(mixed))
	if want := FromSettings(&snapshot.AllocatorSettings{RoundupPower2Divisions: mixed}).Divisions; err != nil || c.Divisions != want {
		t.Errorf("Parse(%q) = %v, %v; want %v", DivisionsText(mixed), c.Divisions, err, want)
	}
}
