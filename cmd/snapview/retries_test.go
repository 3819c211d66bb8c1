package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestRetriesIntervalInEveryView: where the trace only bounds
// num_alloc_retries (torch2.11/oom: 1 to 3; torch's stats.json says 3),
// summary, ranks and check print the one interval, "1 to 3"
// (kit.FigureRange), and their JSON the same "at most" 3; none says "1+".
func TestRetriesIntervalInEveryView(t *testing.T) {
	oom, mlp := sharedSnapshot(t, "torch2.11/oom/snapshot.pickle"), sharedSnapshot(t, "torch2.11/mlp_train/snapshot.pickle")
	text := map[string][]string{
		"summary": {"summary", "--format", "torch", oom},
		"ranks":   {"ranks", oom, mlp},
		"check":   {"check", "--max", "retries=3", oom},
	}
	want := map[string]string{
		"summary": "cudaMalloc retries: 1 to 3 ",
		"ranks":   "|    1 |  1 to 3 |",
		"check":   "retries (num_alloc_retries) = 1 to 3  <= 3",
	}
	for name, args := range text {
		out, _, err := runSnapview(t, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(out, want[name]) || strings.Contains(out, " 1+ ") {
			t.Errorf("%s: want %q and no 1+:\n%s", name, want[name], out)
		}
	}

	var sum struct {
		Devices []struct {
			MemoryStats map[string]struct {
				Value  *int64 `json:"value"`
				AtMost *int64 `json:"at_most"`
			} `json:"memory_stats"`
		} `json:"devices"`
	}
	var ranks struct {
		Ranks []struct {
			Retries *int64 `json:"num_alloc_retries"`
			AtMost  *int64 `json:"num_alloc_retries_at_most"`
		} `json:"ranks"`
	}
	var check struct {
		Checks []struct {
			Value  *int64 `json:"value"`
			AtMost *int64 `json:"at_most"`
		} `json:"checks"`
	}
	for _, c := range []struct {
		args []string
		v    any
	}{
		{[]string{"summary", "--json", oom}, &sum},
		{[]string{"ranks", "--json", oom, mlp}, &ranks},
		{[]string{"check", "--json", "--max", "retries=3", oom}, &check},
	} {
		out, _, err := runSnapview(t, c.args...)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if err := json.Unmarshal([]byte(out), c.v); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
	}
	interval := func(lo, hi *int64) string {
		if lo == nil || hi == nil {
			return "missing"
		}
		return fmt.Sprintf("%d to %d", *lo, *hi)
	}
	r := sum.Devices[0].MemoryStats["num_alloc_retries"]
	got := map[string]string{"summary": interval(r.Value, r.AtMost)}
	if len(ranks.Ranks) == 2 {
		got["ranks"] = interval(ranks.Ranks[0].Retries, ranks.Ranks[0].AtMost)
		if ranks.Ranks[1].AtMost != nil {
			t.Errorf("ranks --json: mlp_train's exact retries have at_most %d", *ranks.Ranks[1].AtMost)
		}
	}
	if len(check.Checks) == 1 {
		got["check"] = interval(check.Checks[0].Value, check.Checks[0].AtMost)
	}
	for _, name := range []string{"summary", "ranks", "check"} {
		if got[name] != "1 to 3" {
			t.Errorf("%s --json: retries %s, want 1 to 3", name, got[name])
		}
	}
}
