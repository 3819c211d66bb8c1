package html

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// testdataReports builds the reports of testdata's snapshots names
// (without ".pickle"), each titled with its name.
func testdataReports(t *testing.T, names ...string) []*Report {
	t.Helper()
	var out []*Report
	for _, name := range names {
		s, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", name+".pickle"))
		if err != nil {
			t.Fatal(err)
		}
		r, err := buildHTML(s, Options{Title: name})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestMergeStacks: every stack index of a merged page (groups, leaks,
// segments' blocks, the single allocations drawn on their own, the state
// panel's allocations and states) names the same lines as in its own
// file's report: a file's device never shows another file's stacks.
func TestMergeStacks(t *testing.T) {
	reports := testdataReports(t, "mlp_train", "leak_cycle")
	m := Merge(reports, "two", "Diff", "")
	k := 0
	for _, r := range reports {
		for _, d := range r.Devices {
			md := m.Devices[k]
			k++
			var refs int
			check := func(what string, own, merged int) {
				t.Helper()
				refs++
				if (own < 0) != (merged < 0) || own >= 0 && !slices.Equal(r.Stacks[own], m.Stacks[merged]) {
					t.Errorf("%s device %d: %s: stack %d of the file, %d of the page: other lines", r.Title, d.Device, what, own, merged)
				}
			}
			for i, g := range d.Groups {
				check(fmt.Sprintf("group %d", i), g.Stack, md.Groups[i].Stack)
			}
			for i, sg := range d.Singles {
				check(fmt.Sprintf("single %d", i), sg.Stack, md.Singles[i].Stack)
			}
			for i, sg := range d.Segments {
				for j, b := range sg.Blocks {
					check(fmt.Sprintf("segment %d block %d", i, j), b.Stack, md.Segments[i].Blocks[j].Stack)
				}
			}
			if d.Inspect != nil {
				for i, a := range d.Inspect.Allocs {
					check(fmt.Sprintf("inspect allocation %d", i), int(a[6]), int(md.Inspect.Allocs[i][6]))
				}
				for i, st := range d.Inspect.States {
					for j, sg := range st.Segments {
						for l, b := range sg.Blocks {
							check(fmt.Sprintf("state %d segment %d block %d", i, j, l), b.Stack, md.Inspect.States[i].Segments[j].Blocks[l].Stack)
						}
					}
				}
			}
			if refs == 0 {
				t.Errorf("%s device %d: no stack to check", r.Title, d.Device)
			}
			if len(d.Singles) == 0 || d.Inspect == nil || len(d.Inspect.Allocs) == 0 {
				t.Errorf("%s device %d: %d singles, inspect %v: the test checks neither", r.Title, d.Device, len(d.Singles), d.Inspect != nil)
			}
		}
	}
	if k != len(m.Devices) {
		t.Errorf("%d devices checked, the page has %d", k, len(m.Devices))
	}
}
