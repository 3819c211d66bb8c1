package allocator

import (
	"math"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

func TestRoundSize(t *testing.T) {
	pow4 := map[int64]int64{}
	for k := int64(1); k <= 32768; k *= 2 {
		pow4[k] = 4
	}
	for _, tc := range []struct {
		name      string
		divisions map[int64]int64
		size      int64
		want      int64
	}{
		{"tiny", nil, 1, 512},
		{"zero", nil, 0, 512},
		{"exact 512", nil, 512, 512},
		{"513", nil, 513, 1024},
		{"1 MiB + 1", nil, mib + 1, mib + 512},
		// [obs] in docs/snapshot-format.md §6 with roundup_power2_divisions:4.
		{"d4 1 MiB + 1", pow4, mib + 1, mib + mib/4},
		{"d4 10 MiB + 1", pow4, 10*mib + 1, 12 * mib},
		{"d4 25 MiB", pow4, 25 * mib, 28 * mib},
		{"d4 100 MiB", pow4, 100 * mib, 112 * mib},
		{"d4 power of two", pow4, 64 * mib, 64 * mib},
		// Under 512*d bytes the divisions do not apply.
		{"d4 1200", pow4, 1200, 1536},
		{"d4 400 GiB", pow4, 400 << 30, 448 << 30},
	} {
		c := FromSettings(&snapshot.AllocatorSettings{MaxSplitSize: -1, RoundupPower2Divisions: tc.divisions})
		if got := c.RoundSize(tc.size); got != tc.want {
			t.Errorf("%s: RoundSize(%d) = %d, want %d", tc.name, tc.size, got, tc.want)
		}
	}
}

// npuLike is a Rounding value of the kind another producer needs.
type npuLike struct{}

func (npuLike) Round(size int64) int64 { return (size + 32 + 511) / 512 * 512 }
func (npuLike) String() string         { return "round_up(size+32, 512)" }

func TestRoundingValue(t *testing.T) {
	c := Default()
	c.Rounding = npuLike{}
	if got := c.RoundSize(512); got != 1024 {
		t.Errorf("RoundSize(512) with a Rounding value = %d, want 1024", got)
	}
	d := c
	if d != c {
		t.Error("configs with the same Rounding value compare unequal")
	}
}

func TestAllocationSize(t *testing.T) {
	for _, tc := range []struct{ size, want int64 }{
		{512, SmallBuffer},
		{mib, SmallBuffer},
		{mib + 512, LargeBuffer},
		{10*mib - 512, LargeBuffer},
		{10 * mib, 10 * mib},
		{10*mib + 512, 12 * mib},
	} {
		if got := AllocationSize(tc.size); got != tc.want {
			t.Errorf("AllocationSize(%d) = %d, want %d", tc.size, got, tc.want)
		}
	}
}

func TestSegmentPool(t *testing.T) {
	for _, tc := range []struct {
		seg  snapshot.Segment
		want bool
	}{
		{snapshot.Segment{TotalSize: 2 * mib}, false},
		{snapshot.Segment{TotalSize: 20 * mib}, true},
		{snapshot.Segment{TotalSize: 12 * mib}, true},
		{snapshot.Segment{TotalSize: 2 * mib, Type: "large"}, true}, // an expandable segment with one page mapped
		{snapshot.Segment{TotalSize: 4 * mib, Type: "small"}, false},
	} {
		if got := IsLargeSegment(&tc.seg); got != tc.want {
			t.Errorf("IsLargeSegment(%d bytes, type %q) = %t, want %t", tc.seg.TotalSize, tc.seg.Type, got, tc.want)
		}
	}
	// Every segment get_allocation_size makes for a large-pool request is
	// a large-pool size; the one for a small-pool request is not.
	for _, rounded := range []int64{512, mib, mib + 512, 10*mib - 512, 10 * mib, 1 << 40} {
		if got, want := IsLargeSegmentSize(AllocationSize(rounded)), !IsSmall(rounded); got != want {
			t.Errorf("IsLargeSegmentSize(AllocationSize(%d)) = %t, want %t", rounded, got, want)
		}
	}
	if PageSize(true) != 2*mib || PageSize(false) != 20*mib {
		t.Errorf("PageSize = %d, %d; want 2 MiB and 20 MiB", PageSize(true), PageSize(false))
	}
}

func TestShouldSplitAndRejects(t *testing.T) {
	def := Default()
	ms, _ := Parse("max_split_size_mb:128")
	exp, _ := Parse("expandable_segments:True")
	for _, tc := range []struct {
		name            string
		c               Config
		small           bool
		block, size     int64
		split, rejected bool
	}{
		{"small, 512 left", def, true, 2 * mib, 2*mib - 512, true, false},
		{"small, 0 left", def, true, mib, mib, false, false},
		{"large, 1 MiB left", def, false, 21 * mib, 20 * mib, false, false},
		{"large, 1 MiB + 512 left", def, false, 21*mib + 512, 20 * mib, true, false},
		{"expandable, 512 left", exp, false, 20*mib + 512, 20 * mib, true, false},
		{"oversize request never split", ms, false, 140 * mib, 128 * mib, false, false},
		{"oversize block for small request", ms, false, 128 * mib, 100 * mib, true, true},
		{"oversize within 20 MiB", ms, false, 148*mib - 512, 128 * mib, false, false},
		{"oversize 20 MiB larger", ms, false, 148 * mib, 128 * mib, false, true},
	} {
		if got := tc.c.ShouldSplit(tc.small, tc.block, tc.size); got != tc.split {
			t.Errorf("%s: ShouldSplit = %t, want %t", tc.name, got, tc.split)
		}
		if got := tc.c.RejectsCachedBlock(tc.block, tc.size); got != tc.rejected {
			t.Errorf("%s: RejectsCachedBlock = %t, want %t", tc.name, got, tc.rejected)
		}
	}
}

func TestParse(t *testing.T) {
	fill := func(v int64) (d [16]int64) {
		for i := range d {
			d[i] = v
		}
		return d
	}
	interval := fill(8)
	for i := 0; i <= 8; i++ {
		interval[i] = 1
	}
	interval[9] = 2
	for _, tc := range []struct {
		conf string
		want func(*Config)
		str  string
	}{
		{"", func(*Config) {}, ""},
		{"expandable_segments:True", func(c *Config) { c.ExpandableSegments = true }, "expandable_segments:True"},
		{" max_split_size_mb : 128 ", func(c *Config) { c.MaxSplitSize = 128 * mib }, "max_split_size_mb:128"},
		{"max_non_split_rounding_mb:64", func(c *Config) { c.MaxNonSplitRounding = 64 * mib }, "max_non_split_rounding_mb:64"},
		{"garbage_collection_threshold:0.6", func(c *Config) { c.GarbageCollectionThreshold = 0.6 }, "garbage_collection_threshold:0.6"},
		{"roundup_power2_divisions:4", func(c *Config) { c.Divisions = fill(4) }, "roundup_power2_divisions:4"},
		{"roundup_power2_divisions:[256:1,512:2,>:8]", func(c *Config) { c.Divisions = interval }, "roundup_power2_divisions:[256:1,512:2,>:8]"},
		{"roundup_power2_divisions:[1:4, 64:8]", func(c *Config) { c.Divisions[0] = 4; c.Divisions[6] = 8 },
			"roundup_power2_divisions:[1:4,2:0,4:0,8:0,16:0,32:0,64:8,>:0]"},
		{"backend:native,release_lock_on_cudamalloc:True,pinned_num_register_threads:8,expandable_segments:False",
			func(*Config) {}, ""},
		{"max_split_size_mb:128,expandable_segments:True", func(c *Config) { c.MaxSplitSize = 128 * mib; c.ExpandableSegments = true },
			"expandable_segments:True,max_split_size_mb:128"},
	} {
		got, err := Parse(tc.conf)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.conf, err)
			continue
		}
		want := Default()
		tc.want(&want)
		if got != want {
			t.Errorf("Parse(%q) = %+v, want %+v", tc.conf, got, want)
		}
		if s := got.String(); s != tc.str {
			t.Errorf("Parse(%q).String() = %q, want %q", tc.conf, s, tc.str)
		}
		if back, err := Parse(got.String()); err != nil || back != got {
			t.Errorf("Parse(%q) does not round-trip through %q: %+v, %v", tc.conf, got.String(), back, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, conf := range []string{
		"max_split_size:128",
		"max_split_size_mb:10",
		"max_split_size_mb:abc",
		"max_split_size_mb",
		"max_split_size_mb:128,",
		"expandable_segments:true",
		"garbage_collection_threshold:1.5",
		"roundup_power2_divisions:3",
		"roundup_power2_divisions:[256:3]",
		"roundup_power2_divisions:[300:2]",
		"roundup_power2_divisions:[256:2",
		"backend:cudaMallocAsync",
		"expandable_segments:True;max_split_size_mb:128",
	} {
		_, err := Parse(conf)
		if err == nil {
			t.Errorf("Parse(%q): no error", conf)
			continue
		}
		if _, ok := err.(*ParseError); !ok {
			t.Errorf("Parse(%q): error %T, want *ParseError", conf, err)
		}
	}
	if _, err := Parse("max_split_size_mb:99999999999999999999999"); err != nil {
		t.Errorf("huge max_split_size_mb: %v (torch clamps it)", err)
	}
	c, _ := Parse("max_split_size_mb:99999999999999999999999")
	if c.MaxSplitSize != math.MaxInt64 {
		t.Errorf("huge max_split_size_mb = %d, want unlimited", c.MaxSplitSize)
	}
}
