package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestPoolsViewsAgree is the property that every view gives the same
// per-pool figures: over the corpus files with private pools (CUDA graphs,
// MemPools), summary, segments and state --json list the same
// private_pools, figure by figure with the same exactness, and each of
// explain's pool findings carries those figures under the same keys.
func TestPoolsViewsAgree(t *testing.T) {
	root := sharedSnapshot(t, "")
	var files []string
	for _, g := range []string{"torch2.11/*/snapshot.pickle", "torch2.11-probe/*.pickle", "public/*.pickle"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		files = append(files, m...)
	}
	checked := 0
	for _, file := range files {
		s, err := snapshot.Load(file)
		if err != nil {
			continue // the decoder's own tests cover these
		}
		var devices []int
		for _, d := range s.Devices() {
			lo, hi := s.DeviceSegments(d)
			for k := lo; k < hi; k++ {
				if sg := &s.Segments[k]; sg.Device == d && !sg.Pool.IsDefault() {
					devices = append(devices, d)
					break
				}
			}
		}
		if len(devices) == 0 {
			continue
		}
		t.Run(strings.TrimPrefix(file, root), func(t *testing.T) {
			summary := jsonOf(t, "summary", "--json", file)
			segments := jsonOf(t, "segments", "--json", file)
			ex := jsonOf(t, "explain", "--json", file)
			for _, d := range devices {
				want, _ := deviceOf(summary, d)["private_pools"].([]any)
				if len(want) == 0 {
					t.Fatalf("device %d: summary --json lists no private pool", d)
				}
				views := map[string]any{
					"segments": deviceOf(segments, d)["private_pools"],
					"state":    jsonOf(t, "state", "--json", "--device", fmt.Sprint(d), "--at", "end", file)["private_pools"],
				}
				for name, got := range views {
					if fmt.Sprint(got) != fmt.Sprint(want) {
						t.Errorf("device %d: %s's private_pools\n%v\nsummary's\n%v", d, name, got, want)
					}
				}
				// explain: one pool finding per pool, its figures the
				// summary's.
				byID := map[string]map[string]any{}
				for _, p := range want {
					pm := p.(map[string]any)
					byID[fmt.Sprint(pm["pool_id"])] = pm
				}
				found := 0
				for _, fv := range deviceOf(ex, d)["findings"].([]any) {
					f := fv.(map[string]any)
					if f["kind"] != "pool" {
						continue
					}
					found++
					p := byID[fmt.Sprint(f["pool_id"])]
					if p == nil {
						t.Errorf("device %d: explain's pool %v is not among summary's", d, f["pool_id"])
						continue
					}
					for name, v := range f["figures"].(map[string]any) {
						if w := path(p, "figures", name); fmt.Sprint(w) != fmt.Sprint(v) {
							t.Errorf("device %d pool %v: explain's %s = %v, summary's %v", d, f["pool_id"], name, v, w)
						}
						if we, e := path(p, "exactness", name), path(f, "exactness", name); we != e {
							t.Errorf("device %d pool %v: explain's %s is %v, summary's %v", d, f["pool_id"], name, e, we)
						}
						checked++
					}
					if first := path(p, "first_alloc_entry"); path(f, "entry") != first {
						t.Errorf("device %d pool %v: explain's entry %v, summary's first_alloc_entry %v", d, f["pool_id"], path(f, "entry"), first)
					}
				}
				if found != len(want) {
					t.Errorf("device %d: %d pool findings for %d private pools", d, found, len(want))
				}
			}
		})
	}
	if checked == 0 {
		t.Skip("no file with private pools in the corpus")
	}
	t.Logf("%d pool figures checked across summary, segments, state and explain", checked)
}
