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
