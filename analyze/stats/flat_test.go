package stats

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/internal/corpus"

	"github.com/google/go-cmp/cmp"
)

// sampleFlat returns a complete flat dict whose values are all distinct.
func sampleFlat() map[string]int64 {
	m := map[string]int64{}
	for i, f := range (&MemoryStats{}).Figures() {
		m[f.Key] = int64(i + 1)
	}
	return m
}

func TestFlatKeys(t *testing.T) {
	figs := (&MemoryStats{}).Figures()
	if got, want := len(figs), 122; got != want {
		t.Errorf("len(Figures()) = %d, want %d (PyTorch 2.11 memory_stats())", got, want)
	}
	for i := 1; i < len(figs); i++ {
		if figs[i-1].Key >= figs[i].Key {
			t.Errorf("Figures() not sorted: %q before %q", figs[i-1].Key, figs[i].Key)
		}
	}
}

func TestStatsFromFlatRoundTrip(t *testing.T) {
	m := sampleFlat()
	s, err := StatsFromFlat(3, m)
	if err != nil {
		t.Fatal(err)
	}
	if s.Device != 3 {
		t.Errorf("Device = %d, want 3", s.Device)
	}
	if diff := cmp.Diff(m, s.Flat()); diff != "" {
		t.Errorf("Flat(StatsFromFlat(m)) mismatch (-want +got):\n%s", diff)
	}
	for _, f := range s.Figures() {
		if f.Exactness != Exact {
			t.Errorf("%s: exactness %v, want exact", f.Key, f.Exactness)
		}
	}
	// Spot-check that keys land in the right fields.
	checks := []struct {
		key string
		got int64
	}{
		{"allocated_bytes.all.peak", s.AllocatedBytes[PoolAll].Peak},
		{"reserved_bytes.small_pool.freed", s.ReservedBytes[PoolSmall].Freed},
		{"inactive_split.large_pool.current", s.InactiveSplit[PoolLarge].Current},
		{"requested_bytes.large_pool.allocated", s.RequestedBytes[PoolLarge].Allocated},
		{"oversize_segments.peak", s.OversizeSegments.Peak},
		{"num_ooms", s.NumOOMs},
		{"num_alloc_retries", s.NumAllocRetries},
		{"max_split_size", s.MaxSplitSize},
	}
	for _, c := range checks {
		if c.got != m[c.key] {
			t.Errorf("field for %q = %d, want %d", c.key, c.got, m[c.key])
		}
	}
}

func TestStatsFromFlatErrors(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(map[string]int64)
		wantErr string // substring; "" means success
		reason  string
	}{
		{"complete", func(map[string]int64) {}, "", "every key present"},
		{"empty", func(m map[string]int64) { clear(m) }, "missing 118 keys", "memory_stats() of an uninitialised device is {}"},
		{"no num_ooms", func(m map[string]int64) { delete(m, "num_ooms") }, `"num_ooms"`, "memory_summary() prints it"},
		{"no requested", func(m map[string]int64) { delete(m, "requested_bytes.all.current") }, `"requested_bytes.all.current"`, "memory_summary() prints it"},
		{"no optional scalars", func(m map[string]int64) {
			delete(m, "num_device_alloc")
			delete(m, "num_device_free")
			delete(m, "num_sync_all_streams")
			delete(m, "max_split_size")
		}, "", "older PyTorch lacks them; memory_summary() does not print them"},
		{"extra key", func(m map[string]int64) { m["new_family.all.current"] = 7 }, "", "newer PyTorch keys are ignored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := sampleFlat()
			tt.mutate(m)
			_, err := StatsFromFlat(0, m)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("StatsFromFlat: unexpected error %v (%s)", err, tt.reason)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("StatsFromFlat: error %v, want one containing %q (%s)", err, tt.wantErr, tt.reason)
			}
		})
	}
}

func TestParseStatsJSONShapes(t *testing.T) {
	flat := `{"allocated_bytes.all.current": 5}`
	tests := []struct {
		name     string
		json     string
		wantDevs []int
		wantErr  string
	}{
		{"flat incomplete", flat, nil, "missing"},
		{"not an object", `[1,2]`, nil, "parsing memory_stats JSON"},
		{"null", `null`, nil, "want a JSON object"},
		{"float value", `{"0": {"num_ooms": 1.5}}`, nil, "want an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatsJSON([]byte(tt.json), 0)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseStatsJSON(%s) error = %v, want %q", tt.json, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var devs []int
			for _, s := range got {
				devs = append(devs, s.Device)
			}
			if diff := cmp.Diff(tt.wantDevs, devs); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseStatsJSONCorpus(t *testing.T) {
	root := Corpus(t)
	var files []string
	for _, pat := range []struct {
		glob string
		min  int
	}{
		{"torch2.11/*/stats.json", 16},
		{"torch2.11/*/snapshot.stats.json", 1},
		{"torch2.11-probe/*.extra.json", 13},
		{"big/*/stats.json", 1},
	} {
		files = append(files, corpus.Match(t, root, pat.glob, pat.min)...)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		stats, err := ParseStatsJSON(data, 0)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		wantDevs := 1
		if strings.HasSuffix(f, "snapshot.stats.json") {
			wantDevs = 2
		}
		if strings.HasSuffix(f, "/stats.json") {
			// The flat dict itself: Flat must give it back unchanged.
			var raw map[string]int64
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(raw, stats[0].Flat()); diff != "" {
				t.Errorf("%s: Flat() != file (-file +Flat):\n%s", f, diff)
			}
		}
		if len(stats) != wantDevs {
			t.Errorf("%s: %d devices, want %d", f, len(stats), wantDevs)
		}
		for i, s := range stats {
			if s.Device != i {
				t.Errorf("%s: stats[%d].Device = %d", f, i, s.Device)
			}
			if got := len(s.Flat()); got != 122 {
				t.Errorf("%s: device %d: %d keys, want 122", f, s.Device, got)
			}
			if s.ReservedBytes[PoolAll].Current != s.ReservedBytes[PoolLarge].Current+s.ReservedBytes[PoolSmall].Current {
				t.Errorf("%s: reserved all != large + small", f)
			}
		}
	}
}
