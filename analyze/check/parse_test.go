package check

import (
	"slices"
	"strings"
	"testing"
)

// TestParseRules: --max takes bytes, counts and percentages, --max-growth
// percentages; a malformed rule is an error naming the flag and saying
// what is wanted.
func TestParseRules(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Rule
	}{
		{"allocated_peak=12GiB", Rule{Kind: Max, Name: "allocated_peak", Key: "allocated_bytes.all.peak", Limit: 12 << 30}},
		{"retries=0", Rule{Kind: Max, Name: "retries", Key: "num_alloc_retries"}},
		{" reserved_peak = 110% ", Rule{Kind: Max, Name: "reserved_peak", Key: "reserved_bytes.all.peak", Percent: 110, IsPercent: true}},
	} {
		if got, err := ParseMax(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseMax(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	if got, err := ParseMaxGrowth("allocated_peak=2.5%"); err != nil || got.Kind != MaxGrowth || got.Percent != 2.5 {
		t.Errorf("ParseMaxGrowth(allocated_peak=2.5%%) = %+v, %v", got, err)
	}
	for _, tt := range []struct {
		in, want string
		growth   bool
	}{
		{"allocated_peak", `--max "allocated_peak": want NAME=VALUE`, false},
		{"nope=1GiB", `--max nope=1GiB: "nope" is not a memory_stats() key`, false},
		{"retries=1.5", "--max retries=1.5: num_alloc_retries counts, so want a whole number", false},
		{"allocated_peak=-1%", "--max allocated_peak=-1%: want a percentage", false},
		{"allocated_peak=x", "--max-growth allocated_peak=x: want a percentage such as 5 or 110%", true},
	} {
		parse := ParseMax
		if tt.growth {
			parse = ParseMaxGrowth
		}
		if _, err := parse(tt.in); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("parse(%q): %v, want an error starting %q", tt.in, err, tt.want)
		}
	}
}

// TestRules: the flags' rules in order; no rule, a bad one and a relative
// limit without a baseline are errors that say so.
func TestRules(t *testing.T) {
	rules, err := Rules(Flags{Max: []string{"reserved_peak=110%"}, Growth: []string{"allocated_peak=5"}, NoOOM: true, NoRetries: true, NoLeak: true, Baseline: true})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []Kind
	for _, r := range rules {
		kinds = append(kinds, r.Kind)
	}
	if want := []Kind{Max, MaxGrowth, NoOOM, NoRetries, NoLeak}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	for _, tt := range []struct {
		f    Flags
		want string
	}{
		{Flags{}, "no check given"},
		{Flags{Max: []string{"foo=1"}}, `"foo" is not a memory_stats() key`},
		{Flags{Max: []string{"reserved_peak=110%"}}, "reserved_peak: a limit relative to the baseline needs --baseline BASE"},
		{Flags{Growth: []string{"allocated_peak=2"}}, "needs --baseline"},
	} {
		if _, err := Rules(tt.f); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Rules(%+v): %v, want %q", tt.f, err, tt.want)
		}
	}
}
