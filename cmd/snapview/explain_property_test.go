package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// jsonOf runs snapview with args and decodes its stdout.
func jsonOf(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, _, err := runSnapview(t, args...)
	if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return m
}

// path walks m by keys and indexes ("devices", 0, "findings").
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func num(v any) (int64, bool) {
	f, ok := v.(float64)
	return int64(f), ok
}

// deviceOf returns the element of a views' "devices" list for device d.
func deviceOf(doc map[string]any, d int) map[string]any {
	ds, _ := doc["devices"].([]any)
	for _, x := range ds {
		m, _ := x.(map[string]any)
		if n, _ := num(m["device"]); int(n) == d {
			return m
		}
	}
	return nil
}

// TestExplainFiguresAgree is the property that explain shows no figure of
// its own: over the corpus and rec's recordings, each figure of each finding equals the one
// summary, state, whatif, leaks or info --json gives for the same file,
// and no file without steps gets a "leak" finding from growth that
// comes and goes.
func TestExplainFiguresAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every view over the corpus")
	}
	root := sharedSnapshot(t, "")
	var files []string
	for _, g := range []string{"torch2.11/*/snapshot.pickle", "public/*.pickle", "field/*.pickle"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		files = append(files, m...)
	}
	// rec's H200 recordings of issues 21-25 (OOMs under caps).
	m, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "snapshots", "whatif", "*", "*", "snapshot.pickle.xz"))
	files = append(files, m...)
	checked := 0
	for _, file := range files {
		t.Run(strings.TrimPrefix(file, root), func(t *testing.T) {
			ex := jsonOf(t, "explain", "--json", file)
			var summary, leaks, info, whatif map[string]any
			lazy := func(m *map[string]any, args ...string) map[string]any {
				if *m == nil {
					*m = jsonOf(t, append(args, file)...)
				}
				return *m
			}
			states := map[string]map[string]any{}
			state := func(d int, at string) map[string]any {
				k := fmt.Sprint(d, at)
				if states[k] == nil {
					states[k] = jsonOf(t, "state", "--json", "--device", fmt.Sprint(d), "--at", at, file)
				}
				return states[k]
			}
			for _, dv := range ex["devices"].([]any) {
				d := int(dv.(map[string]any)["device"].(float64))
				for _, fv := range dv.(map[string]any)["findings"].([]any) {
					f := fv.(map[string]any)
					kind := f["kind"].(string)
					figs := f["figures"].(map[string]any)
					want := map[string]any{}
					entry, _ := num(f["entry"])
					switch kind {
					case "oom-cap", "oom-device", "oom-fragmentation":
						st := state(d, fmt.Sprintf("entry:%d", entry))
						want["request_bytes"] = path(st, "oom", "size")
						want["device_free_bytes"] = path(st, "oom", "device_free")
						want["free_in_pool_bytes"] = path(st, "oom", "free_in_pool_bytes")
						want["largest_free_bytes"] = path(st, "oom", "largest_free_bytes")
						want["reserved_bytes"] = path(st, "memory_stats", "reserved_bytes.all.current")
						want["allocated_bytes"] = path(st, "memory_stats", "allocated_bytes.all.current")
						w := deviceOf(lazy(&whatif, "whatif", "--json"), d)
						want["cap_min_bytes"] = path(w, "limit_inferred", "min_bytes")
						want["cap_max_bytes"] = path(w, "limit_inferred", "max_bytes")
						want["uncapped_peak_reserved_bytes"] = path(w, "uncapped_peak_reserved_bytes")
					case "blockers", "reserved-gap":
						st := state(d, fmt.Sprintf("entry:%d", entry))
						if f["mode"] == "release" {
							var n, size, free int64
							for _, sv := range st["segments"].([]any) {
								s := sv.(map[string]any)
								id := s["pool_id"].([]any)
								a, _ := num(s["allocated_bytes"])
								p, _ := num(s["pending_free_bytes"])
								fr, _ := num(s["free_bytes"])
								if id[0].(float64) == 0 && id[1].(float64) == 0 && !s["expandable"].(bool) && a+p > 0 && fr > 0 &&
									(kind == "blockers" || fr >= a+p) {
									sz, _ := num(s["size"])
									n, size, free = n+1, size+sz, free+fr
								}
							}
							want["pinned_segments"], want["pinned_segment_bytes"], want["stranded_bytes"] = float64(n), float64(size), float64(free)
						}
						if kind == "blockers" {
							break
						}
						ms := path(deviceOf(lazy(&summary, "summary", "--json"), d), "memory_stats")
						want["peak_allocated_bytes"] = path(ms, "allocated_bytes.all.peak", "value")
						want["peak_reserved_bytes"] = path(ms, "reserved_bytes.all.peak", "value")
						want["reserved_bytes"] = path(st, "memory_stats", "reserved_bytes.all.current")
						want["allocated_bytes"] = path(st, "memory_stats", "allocated_bytes.all.current")
						want["non_releasable_bytes"] = path(st, "memory_stats", "inactive_split_bytes.all.current")
					case "leak", "no-leak", "growth-unjudged":
						ld := deviceOf(lazy(&leaks, "leaks", "--json"), d)
						want["steps"] = path(ld, "steps", "count")
						want["live_bytes"] = path(ld, "live_bytes")
						if kind == "leak" {
							if path(ld, "steps", "source") == "slices" {
								t.Errorf("device %d: a leak finding on a trace without steps", d)
							}
							for _, gv := range leaks["groups"].([]any) {
								g := gv.(map[string]any)
								if n, _ := num(g["device"]); int(n) == d && g["rank"] == figs["rank"] {
									want["bytes"], want["count"] = g["bytes"], g["count"]
									want["score"] = g["score"]
									want["growth_steps"] = g["growth_steps"]
									want["first_alloc_entry"] = g["first_alloc_entry"]
								}
							}
							if want["score"] == nil {
								t.Errorf("device %d: the leak finding's group (rank %v) is not among leaks --json's groups", d, figs["rank"])
							}
						}
					case "pool":
						var n, size, alloc int64
						for _, sv := range state(d, "end")["segments"].([]any) {
							s := sv.(map[string]any)
							id := s["pool_id"].([]any)
							fid := f["pool_id"].([]any)
							if id[0] == fid[0] && id[1] == fid[1] {
								sz, _ := num(s["size"])
								a, _ := num(s["allocated_bytes"])
								n, size, alloc = n+1, size+sz, alloc+a
							}
						}
						want["segments_at_end"], want["reserved_at_end_bytes"], want["active_at_end_bytes"] = float64(n), float64(size), float64(alloc)
					case "avoidable-malloc":
						for _, av := range path(deviceOf(lazy(&info, "info", "--json"), d), "actions").([]any) {
							if a := av.(map[string]any); a["name"] == "segment_alloc" {
								want["segment_allocs"] = a["count"]
							}
						}
					case "recording":
						want["entries"] = path(deviceOf(lazy(&info, "info", "--json"), d), "trace_entries")
						want["untraced_blocks"] = path(deviceOf(info, d), "untraced_live_blocks")
						want["orphan_frees"] = path(deviceOf(info, d), "orphan_frees")
					}
					for name, w := range want {
						got, ok := figs[name]
						if !ok || w == nil || got == nil && path(f, "exactness", name) == "unknown" {
							// Not a figure explain gives, or one it marks
							// unknown (and prints as "?").
							continue
						}
						if got != w {
							t.Errorf("device %d %s: %s = %v, the other view says %v", d, kind, name, got, w)
						}
						checked++
					}
					if s := f["setting"]; s != nil && kind == "blockers" {
						// The blockers' own fix, simulated as whatif --conf
						// simulates it.
						w := deviceOf(jsonOf(t, "whatif", "--json", "--conf", path(s, "conf").(string), file), d)
						c := path(w, "candidates", 1)
						if path(c, "peak_reserved_bytes") != path(s, "peak_reserved_bytes") || (path(c, "oom") == false) != path(s, "fits") {
							t.Errorf("device %d blockers: setting %v, whatif --conf says %v", d, s, c)
						}
						checked++
					} else if s != nil && kind == "avoidable-malloc" {
						// expandable_segments:True as whatif simulated it
						// under the file's cap: the same row, fitting at
						// every cap the file allows or not.
						w := deviceOf(lazy(&whatif, "whatif", "--json"), d)
						found := false
						for _, cv := range w["candidates"].([]any) {
							c := cv.(map[string]any)
							if c["conf"] != path(s, "conf") {
								continue
							}
							found = true
							fits := c["oom"] == false
							if v, ok := c["fits_at_max_cap"]; ok && v != nil {
								fits = fits && v == true
							}
							if c["peak_reserved_bytes"] != path(s, "peak_reserved_bytes") || fits != path(s, "fits") {
								t.Errorf("device %d %s: setting %v, whatif's row %v", d, kind, s, c)
							}
						}
						if !found {
							t.Errorf("device %d %s: setting %v, whatif has no such row", d, kind, s)
						}
						checked++
					} else if s != nil {
						w := deviceOf(lazy(&whatif, "whatif", "--json"), d)
						found := false
						for _, cv := range w["candidates"].([]any) {
							c := cv.(map[string]any)
							if c["best"] == true {
								found = true
								conf := c["conf"].(string)
								if conf == "" {
									conf = `""`
								}
								if conf != path(s, "conf") || c["peak_reserved_bytes"] != path(s, "peak_reserved_bytes") {
									t.Errorf("device %d %s: setting %v, whatif's best %v at %v", d, kind, s, conf, c["peak_reserved_bytes"])
								}
							}
						}
						if !found {
							t.Errorf("device %d %s: setting %v, whatif marks no best", d, kind, s)
						}
					}
				}
			}
		})
	}
	t.Logf("%d figures compared", checked)
	if checked == 0 {
		t.Error("no figure compared")
	}
}

// TestNoPossibleLeakWithoutSteps: over the corpus, leaks --json says
// "possible-leak" on a trace cut into equal slices (no steps found) only
// for a group whose live bytes never drop from slice to slice.
func TestNoPossibleLeakWithoutSteps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs leaks over the corpus")
	}
	root := sharedSnapshot(t, "")
	var files []string
	for _, g := range []string{"torch2.11/*/snapshot.pickle", "torch2.11-probe/*.pickle", "public/*.pickle", "field/*.pickle"} {
		m, _ := filepath.Glob(filepath.Join(root, g))
		files = append(files, m...)
	}
	seen := 0
	for _, file := range files {
		doc := jsonOf(t, "leaks", "--json", file)
		for _, gv := range doc["groups"].([]any) {
			g := gv.(map[string]any)
			d, _ := num(g["device"])
			if g["kind"] != "possible-leak" || path(deviceOf(doc, int(d)), "steps", "source") != "slices" {
				continue
			}
			seen++
			var last int64
			for _, pv := range g["growth"].([]any) {
				b, _ := num(pv.(map[string]any)["bytes"])
				if b < last {
					t.Errorf("%s device %d rank %v: possible leak without steps, growth drops %d -> %d", file, d, g["rank"], last, b)
				}
				last = b
			}
		}
	}
	t.Logf("%d possible leaks without steps, all monotone", seen)
}
