package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/units"
)

// TestRanksOneClock: two ranks of one run whose recordings started 0.5 s
// (and 3 s) apart peak together; timed from each file's own first entry
// they looked 0.5 s (3 s) apart. ranks puts them on the time_us clock
// (testdata/snapshots/ranks_apart/README.md has the figures).
func TestRanksOneClock(t *testing.T) {
	for _, tt := range []struct {
		dir, spread, started string
		spreadUS             int64
	}{
		{"ranks_apart", "2.842ms", "501.862ms", 2842},
		{"ranks_apart_3s", "183µs", "3.002s", 183},
	} {
		t.Run(tt.dir, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "snapshots", tt.dir)
			a, b := filepath.Join(dir, "rank0", "snapshot.pickle.xz"), filepath.Join(dir, "rank1", "snapshot.pickle.xz")
			out, _, err := runSnapview(t, "ranks", a, b)
			if err != nil {
				t.Fatal(err)
			}
			flat := strings.Join(strings.Fields(out), " ")
			want := "The ranks' allocated peaks fall together: within " + tt.spread + " of each other on the time_us clock (times are from the first rank's first entry); the ranks started recording up to " + tt.started + " apart."
			if !strings.Contains(flat, want) {
				t.Errorf("ranks lacks %q:\n%s", want, out)
			}
			js, _, err := runSnapview(t, "ranks", "--json", a, b)
			if err != nil {
				t.Fatal(err)
			}
			var j struct {
				PeaksApart    bool   `json:"peaks_apart"`
				PeakSpreadUS  *int64 `json:"peak_spread_us"`
				ClockOriginUS *int64 `json:"clock_origin_us"`
				Ranks         []struct {
					AllocUS *int64 `json:"peak_allocated_time_us"`
					ResUS   *int64 `json:"peak_reserved_time_us"`
				} `json:"ranks"`
			}
			if err := json.Unmarshal([]byte(js), &j); err != nil {
				t.Fatal(err)
			}
			if j.PeaksApart || j.PeakSpreadUS == nil || *j.PeakSpreadUS != tt.spreadUS {
				t.Errorf("JSON peaks_apart %v, peak_spread_us %v, want false and %d", j.PeaksApart, j.PeakSpreadUS, tt.spreadUS)
			}
			// The JSON's peak times are the text's When columns: each
			// rank's row shows them from the clock origin.
			if j.ClockOriginUS == nil || len(j.Ranks) != 2 {
				t.Fatalf("JSON clock_origin_us %v, %d ranks", j.ClockOriginUS, len(j.Ranks))
			}
			for i, r := range j.Ranks {
				if r.AllocUS == nil || r.ResUS == nil {
					t.Fatalf("rank %d: peak times %v %v, want both", i, r.AllocUS, r.ResUS)
				}
				for _, us := range []int64{*r.AllocUS, *r.ResUS} {
					if cell := units.Seconds(us-*j.ClockOriginUS, 3); !strings.Contains(out, cell) {
						t.Errorf("rank %d: JSON peak at %d us is %s from the origin; the text has no such time:\n%s", i, us, cell, out)
					}
				}
			}
		})
	}
}

// TestDiffOneClock: diff of two ranks' files says where their moments and
// their traces' starts fall on the time_us clock, as ranks does (the same
// 2.842 ms and 501.862 ms on ranks_apart), and its JSON gives each side's
// time_us, whose difference is that distance; one file at two moments has
// no clock line.
func TestDiffOneClock(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "snapshots", "ranks_apart")
	a, b := filepath.Join(dir, "rank0", "snapshot.pickle.xz"), filepath.Join(dir, "rank1", "snapshot.pickle.xz")
	out, _, err := runSnapview(t, "diff", a, b)
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(out), " ")
	if want := "clock: on time_us, the new moment falls 2.842ms after the base moment; the new trace starts 501.862ms after the base trace"; !strings.Contains(flat, want) {
		t.Errorf("diff lacks %q:\n%s", want, out)
	}
	js, _, err := runSnapview(t, "diff", "--json", a, b)
	if err != nil {
		t.Fatal(err)
	}
	var j struct {
		Base, New struct {
			TimeUS *int64 `json:"time_us"`
		}
	}
	if err := json.Unmarshal([]byte(js), &j); err != nil {
		t.Fatal(err)
	}
	if j.Base.TimeUS == nil || j.New.TimeUS == nil || *j.New.TimeUS-*j.Base.TimeUS != 2842 {
		t.Errorf("time_us base %v new %v, want 2,842 µs apart", j.Base.TimeUS, j.New.TimeUS)
	}
	one, _, err := runSnapview(t, "diff", a, "--base-at", "end", "--at", "peak")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(one, "clock:") {
		t.Errorf("one file at two moments has a clock line:\n%s", one)
	}
}
