package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// alignRanksJSON is what the align tests read of ranks --json.
type alignRanksJSON struct {
	PeaksApart   bool   `json:"peaks_apart"`
	PeakSpreadUS *int64 `json:"peak_spread_us"`
	Align        string `json:"align"`
	Ranks        []struct {
		File         string `json:"file"`
		PeakStep     int    `json:"peak_allocated_step"`
		AlignShiftUS *int64 `json:"align_shift_us"`
	} `json:"ranks"`
}

// alignDiffJSON is what the align tests read of diff --json.
type alignDiffJSON struct {
	Align *struct {
		On             string `json:"on"`
		BaseShiftUS    int64  `json:"base_shift_us"`
		NewShiftUS     int64  `json:"new_shift_us"`
		NewMinusBaseUS *int64 `json:"new_minus_base_us"`
	} `json:"align"`
}

func runJSON[T any](t *testing.T, args ...string) T {
	t.Helper()
	out, _, err := runSnapview(t, args...)
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s: %v\n%.2000s", strings.Join(args, " "), err, out)
	}
	return v
}

// TestAlignStep: ranks and diff --align step line two ranks up on their
// first steps with the rule report --align step follows
// (steps.AlignFirst), and agree with each other: diff's distance between
// the two peaks is ranks' spread, each side moved as far in both. On
// ranks_apart (recordings started 0.5 s apart, steps lined up by a
// barrier to the millisecond: testdata/snapshots/ranks_apart/README.md)
// the peaks fall together and the first steps are under a millisecond
// apart; on the ddp pair the peaks fall in steps 1 and 4, apart.
func TestAlignStep(t *testing.T) {
	snaps := filepath.Join("..", "..", "testdata", "snapshots")
	for _, tt := range []struct {
		name       string
		a, b       string
		apart      bool
		text       string
		maxShiftUS int64
	}{
		{"ranks_apart", filepath.Join(snaps, "ranks_apart", "rank0", "snapshot.pickle.xz"), filepath.Join(snaps, "ranks_apart", "rank1", "snapshot.pickle.xz"),
			false, "The ranks' allocated peaks fall together: within 2.889ms of each other on the time_us clock with the ranks' first steps lined up (--align step)", 1000},
		{"ddp", filepath.Join(snaps, "ddp_rank0.pickle"), filepath.Join(snaps, "ddp_rank1.pickle"),
			true, "The ranks' allocated peaks fall apart, in steps 1 to 4, 53.024ms apart on the time_us clock with the ranks' first steps lined up (--align step)", 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runSnapview(t, "ranks", "--align", "step", tt.a, tt.b)
			if err != nil {
				t.Fatal(err)
			}
			if flat := strings.Join(strings.Fields(out), " "); !strings.Contains(flat, tt.text) {
				t.Errorf("ranks --align step lacks %q:\n%s", tt.text, out)
			}
			rk := runJSON[alignRanksJSON](t, "ranks", "--json", "--align", "step", tt.a, tt.b)
			if rk.Align != "step" || rk.PeaksApart != tt.apart || rk.PeakSpreadUS == nil || len(rk.Ranks) != 2 {
				t.Fatalf("ranks --json --align step: align %q, peaks_apart %v (want %v), spread %v, %d ranks", rk.Align, rk.PeaksApart, tt.apart, rk.PeakSpreadUS, len(rk.Ranks))
			}
			var shifts [2]int64
			zero := 0
			for i, r := range rk.Ranks {
				if r.AlignShiftUS == nil || *r.AlignShiftUS < 0 || *r.AlignShiftUS > tt.maxShiftUS {
					t.Fatalf("rank %d: align_shift_us %v, want 0 to %d", i, r.AlignShiftUS, tt.maxShiftUS)
				}
				shifts[i] = *r.AlignShiftUS
				if shifts[i] == 0 {
					zero++
				}
			}
			if zero == 0 {
				t.Errorf("align_shift_us %v: the rank with the latest first step stays (0)", shifts)
			}
			// Without --align the JSON is as before: no align keys.
			plain, _, err := runSnapview(t, "ranks", "--json", tt.a, tt.b)
			if err != nil || strings.Contains(plain, `"align`) {
				t.Errorf("ranks --json without --align has align keys (err %v)", err)
			}
			// diff of the two ranks, each at its peak, on the same clock.
			d := runJSON[alignDiffJSON](t, "diff", "--json", "--align", "step", tt.a, tt.b)
			if d.Align == nil || d.Align.On != "step" || d.Align.NewMinusBaseUS == nil {
				t.Fatalf("diff --json --align step: align %+v", d.Align)
			}
			if d.Align.BaseShiftUS != shifts[0] || d.Align.NewShiftUS != shifts[1] {
				t.Errorf("diff moved base %d, new %d µs; ranks moved them %v", d.Align.BaseShiftUS, d.Align.NewShiftUS, shifts)
			}
			if gap := *d.Align.NewMinusBaseUS; max(gap, -gap) != *rk.PeakSpreadUS {
				t.Errorf("diff puts the peaks %d µs apart, ranks %d", gap, *rk.PeakSpreadUS)
			}
			text, _, err := runSnapview(t, "diff", "--align", "step", tt.a, tt.b)
			if err != nil || !strings.Contains(strings.Join(strings.Fields(text), " "), "aligned: with the first steps lined up (--align step; ") {
				t.Errorf("diff --align step text (err %v) lacks its aligned line:\n%.1500s", err, text)
			}
		})
	}
}

// TestAlignStepNoSteps: a file without steps cannot be lined up on them:
// a usage error naming it, in ranks and diff as in report.
func TestAlignStepNoSteps(t *testing.T) {
	snaps := filepath.Join("..", "..", "testdata", "snapshots")
	a, b := filepath.Join(snaps, "ddp_rank0.pickle"), filepath.Join(snaps, "annotate.pickle")
	for _, args := range [][]string{
		{"ranks", "--align", "step", a, b},
		{"ranks", "--json", "--align", "step", a, b},
		{"diff", "--align", "step", a, b},
		{"diff", "--json", "--align", "step", b, a},
		{"report", "-o", filepath.Join(t.TempDir(), "r.html"), "--align", "step", a, b},
	} {
		_, _, err := runSnapview(t, args...)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), "--align step: ") || !strings.Contains(err.Error(), "annotate.pickle") ||
			!strings.Contains(err.Error(), "no steps") {
			t.Errorf("%s: error %v (exit %d), want a usage error naming annotate.pickle and its missing steps", strings.Join(args, " "), err, exitCode(err))
		}
	}
	for _, cmd := range []string{"ranks", "diff", "report"} {
		_, _, err := runSnapview(t, cmd, "--align", "entry", a, b)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), `--align must be time or step, got "entry"`) {
			t.Errorf("%s --align entry: %v, want a usage error", cmd, err)
		}
	}
}
