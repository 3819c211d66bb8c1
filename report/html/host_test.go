package html

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestReportHost: a file with pinned host memory gets its own section on
// the page (after the devices', linked from the header), with the figures
// summary gives and the pinned memory handed out at the end by stack; a
// file of host memory only gets a page of that section alone. The figures
// are host_pinned.meta.json's, derived by hand (peak 6,291,584 B pinned
// in 4 blocks, 6,291,456 B handed out; 4,194,304 B at pin_batch and 1,048,576 B at collate
// live at the end), and host_memory.pickle's (1,052,672 B in 2 blocks at
// pin_memory). A file without host memory has no such section.
func TestReportHost(t *testing.T) {
	type live struct {
		bytes  int64
		blocks int
		frame  string
	}
	for _, tc := range []struct {
		name    string
		devices []int // as the report command picks them
		lines   []string
		live    []live
	}{
		{"host_pinned", nil, []string{
			"Peak (replayed under the caching host allocator&#39;s rules): 6.0 MiB pinned in 4 blocks, 6.0 MiB handed out in 3 requests (exact).",
			"Along the trace: 5 blocks pinned (num_host_alloc), 1 unpinned by empty_cache (num_host_free).",
		}, []live{{4194304, 1, "pin_batch"}, {1048576, 1, "collate"}}},
		{"host_memory", []int{}, []string{
			"Peak (replayed under the caching host allocator&#39;s rules): 2.0 MiB pinned in 3 blocks, 2.0 MiB handed out in 2 requests (exact).",
		}, []live{{1052672, 2, "pin_memory"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", tc.name+".pickle"))
			if err != nil {
				t.Fatal(err)
			}
			r, err := buildHTML(s, Options{Title: tc.name, Devices: tc.devices})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Hosts) != 1 {
				t.Fatalf("%d host sections, want 1", len(r.Hosts))
			}
			h := r.Hosts[0]
			if len(h.Live) != len(tc.live) {
				t.Fatalf("live by stack = %+v, want %+v", h.Live, tc.live)
			}
			var sum int64
			for i, l := range h.Live {
				w := tc.live[i]
				st := r.Stacks[l.Stack]
				if l.Bytes != w.bytes || l.Blocks != w.blocks || len(st) == 0 || !strings.Contains(st[0], w.frame) {
					t.Errorf("live[%d] = %+v (stack %q), want %+v", i, l, st, w)
				}
				sum += w.bytes
			}
			if h.LiveBytes != sum {
				t.Errorf("LiveBytes = %d, want %d", h.LiveBytes, sum)
			}
			page := writeHTMLString(t, r)
			checkPageStructure(t, page, nil)
			k := strings.Index(page, `<section class="device host" id="host">`)
			if k < 0 {
				t.Fatal("no host section on the page")
			}
			sec := page[k : k+strings.Index(page[k:], "</section>")]
			for _, want := range tc.lines {
				if !strings.Contains(sec, "<li>"+want+"</li>") {
					t.Errorf("host section lacks %q:\n%s", want, sec)
				}
			}
			if n := len(regexp.MustCompile(`<tr><td class="num">`).FindAllString(sec, -1)); n != len(tc.live) {
				t.Errorf("host section has %d rows, want %d", n, len(tc.live))
			}
			if !strings.Contains(page, `<a href="#host">Pinned host memory</a>`) {
				t.Error("the header does not link the host section")
			}
			devs := strings.Count(page, `<section class="device" id=`)
			if want := len(s.Devices()); devs != want {
				t.Errorf("%d device sections, want %d", devs, want)
			}
		})
	}
	s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := buildHTML(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if page := writeHTMLString(t, r); len(r.Hosts) != 0 || strings.Contains(page, "Pinned host memory") {
		t.Errorf("a file without host memory has %d host sections", len(r.Hosts))
	}
}

// TestMergeHost: a report of several files keeps each file's host
// section, named for its file, its stacks moved with the file's.
func TestMergeHost(t *testing.T) {
	reps := testdataReports(t, "mlp_train", "host_pinned")
	m := Merge(reps, "two", "", "")
	if len(m.Hosts) != 1 || m.Hosts[0].File != "host_pinned" || m.Hosts[0].Key != "f1_host" {
		t.Fatalf("merged hosts = %+v", m.Hosts)
	}
	for i, l := range m.Hosts[0].Live {
		if got, want := m.Stacks[l.Stack], reps[1].Stacks[reps[1].Hosts[0].Live[i].Stack]; strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("live[%d]'s stack %q, want %q", i, got, want)
		}
	}
	if page := writeHTMLString(t, m); !strings.Contains(page, `<section class="device host" id="f1_host">`) {
		t.Error("no host section of the second file on the merged page")
	}
}
