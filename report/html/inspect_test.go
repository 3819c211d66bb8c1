package html

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// inspectTotals recomputes, as report.js liveState does, the allocated
// and reserved bytes after entry i from the embedded lives.
func inspectTotals(in *Inspect, i int64) (allocated, reserved int64) {
	for _, s := range in.Segments {
		if s[2] <= i && (s[3] < 0 || s[3] > i) {
			reserved += s[1]
		}
	}
	for _, a := range in.Allocs {
		if a[3] > i {
			continue
		}
		endReq := int64(1 << 62)
		switch {
		case a[4] >= 0:
			endReq = a[4]
		case a[5] >= 0:
			endReq = a[5]
		}
		if i < endReq {
			allocated += a[1]
		}
	}
	return allocated, reserved
}

// TestHTMLInspectLive checks that the allocation and segment lives the
// page embeds give the replay's allocated and reserved bytes after every
// entry, and that the precomputed states of a long trace are the
// replay's.
func TestHTMLInspectLive(t *testing.T) {
	paths := []string{filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle")}
	if dir := corpus.Find(t); dir != "" {
		for _, rel := range []string{"torch2.11/leak_train/snapshot.pickle", "torch2.11/expandable/snapshot.pickle", "torch2.11/oom/snapshot.pickle", "public/p32-3dev-expandable-oom.pickle"} {
			paths = append(paths, filepath.Join(dir, rel))
		}
	}
	for _, path := range paths {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			s, err := snapshot.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, maxLive := range []int{0, 10} {
				r, err := buildHTML(s, Options{MaxLiveEntries: maxLive, MaxStates: 5})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range r.Devices {
					res, err := replay.Run(s, d.Device, replay.Options{})
					if err != nil || d.Inspect == nil {
						continue
					}
					in := d.Inspect
					if in.Live != (maxLive == 0) {
						t.Errorf("device %d: Live = %v with MaxLiveEntries %d", d.Device, in.Live, maxLive)
					}
					if !in.Live {
						if len(in.States) == 0 || len(in.States) > 5+1+len(res.OOMs) {
							t.Errorf("device %d: %d precomputed states, want 1 to %d", d.Device, len(in.States), 6+len(res.OOMs))
						}
						if n := len(res.Allocated); n > 1 && (in.States[0].Index != 0 || in.States[len(in.States)-1].Index != n-1) {
							t.Errorf("device %d: precomputed states from entry %d to %d, want them spread from 0 to %d", d.Device, in.States[0].Index, in.States[len(in.States)-1].Index, n-1)
						}
						if !slices.ContainsFunc(in.States, func(st InspectState) bool { return st.Index == res.PeakIndex }) {
							t.Errorf("device %d: no precomputed state at the peak %d", d.Device, res.PeakIndex)
						}
						for _, st := range in.States {
							var alloc int64
							for _, sg := range st.Segments {
								for _, b := range sg.Blocks {
									if b.State == BlockAllocated {
										alloc += b.Size
									}
								}
							}
							if len(st.Segments) < 200 && alloc != res.Allocated[st.Index] {
								t.Errorf("device %d state after %d: %d bytes allocated, replay says %d", d.Device, st.Index, alloc, res.Allocated[st.Index])
							}
						}
						continue
					}
					bad := 0
					for i := range res.Allocated {
						a, rv := inspectTotals(in, int64(i))
						if (a != res.Allocated[i] || rv != res.Reserved[i]) && bad < 3 {
							bad++
							t.Errorf("device %d after entry %d: allocated %d reserved %d from the embedded lives, replay %d and %d",
								d.Device, i, a, rv, res.Allocated[i], res.Reserved[i])
						}
					}
				}
			}
		})
	}
}

// TestHTMLTimelineChoices checks the timeline's axis, points and
// one-entry rule on real files.
func TestHTMLTimelineChoices(t *testing.T) {
	t.Run("leak_train opens by entry", func(t *testing.T) {
		s := sharedSnapshot(t, "torch2.11/leak_train/snapshot.pickle")
		r, err := buildHTML(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		d := r.Devices[0]
		if !d.XByIndex || len(d.Steps) != 30 {
			t.Errorf("XByIndex %v with %d steps, want true with 30 (meta.json's; the slow first step squeezes the rest by time)", d.XByIndex, len(d.Steps))
		}
		if n := len(d.Timeline.Index); n > 500+2 {
			t.Errorf("%d points drawn, want at most about 500 (HTMLOptions.MaxPoints)", n)
		}
	})
	t.Run("state_only has no chart", func(t *testing.T) {
		s := sharedSnapshot(t, "torch2.11/state_only/snapshot.pickle")
		r, err := buildHTML(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range r.Devices {
			if d.Timeline != nil {
				t.Errorf("device %d: a timeline of %d entries", d.Device, d.Timeline.Entries)
			}
		}
		page := writeHTMLString(t, r)
		for _, bad := range []string{`id="timeline_d0"`, "-86400"} {
			if strings.Contains(page, bad) {
				t.Errorf("page holds %q", bad)
			}
		}
	})
	t.Run("p34 caps record_function ranges", func(t *testing.T) {
		s := sharedSnapshot(t, "public/p34-compile-annotations-1800.pickle")
		r, err := buildHTML(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		d := r.Devices[0]
		if len(d.Annotations) > 100 || d.AnnotationsTotal <= 100 {
			t.Errorf("%d of %d ranges drawn, want at most 100 of more", len(d.Annotations), d.AnnotationsTotal)
		}
		for _, a := range d.Annotations {
			if a.I0 > a.I1 || a.X0 > a.X1 {
				t.Errorf("range %+v goes backwards", a)
				break
			}
		}
	})
}

func TestHTMLChooseAxis(t *testing.T) {
	// Ten entries a microsecond apart, then a slow stretch: by time,
	// entries 0 to 9 take a thousandth of the width.
	slow := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10000, 20000}
	steps := func(r ...[2]int) []Range {
		var out []Range
		for _, x := range r {
			out = append(out, Range{I0: x[0], I1: x[1], X0: slow[x[0]], X1: slow[x[1]]})
		}
		return out
	}
	tests := []struct {
		name    string
		timeUS  []int64
		steps   []Range
		zoom    bool
		byIndex bool
	}{
		{"no times", nil, nil, false, true},
		{"steps squeezed by time", slow, steps([2]int{0, 3}, [2]int{3, 6}, [2]int{6, 9}), false, true},
		{"steps spread by time", slow, steps([2]int{9, 10}, [2]int{10, 11}), false, false},
		{"no steps, an idle stretch", slow, nil, true, true},
		{"no steps", slow, nil, false, false},
	}
	for _, tt := range tests {
		d := &DeviceView{Steps: tt.steps}
		if tt.zoom {
			d.Zoom = &Zoom{}
		}
		htmlChooseAxis(d, tt.timeUS)
		if d.XByIndex != tt.byIndex || d.AxisNote == "" {
			t.Errorf("%s: XByIndex %v (%q), want %v", tt.name, d.XByIndex, d.AxisNote, tt.byIndex)
		}
	}
}

func TestHTMLSparkline(t *testing.T) {
	if got := htmlSparkline(nil, false); got != "" {
		t.Errorf("no growth: %q", got)
	}
	got := string(htmlSparkline([]int64{0, 512, 1024}, false))
	if strings.Count(got, "<rect") != 2 || !strings.Contains(got, "up to 1.0 KiB") || !strings.HasPrefix(got, "<svg") {
		t.Errorf("sparkline = %s", got)
	}
}
