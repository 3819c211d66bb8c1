package html

import (
	"fmt"
	"strings"
)

// Merge makes one report of several files' reports (each from
// [Build]), with compare (the text of `snapview ranks` or `snapview
// diff`) on top under title. Each device section is labelled with its
// file (the report's Title) and every timeline is drawn on the same
// scale: the highest bytes and the longest trace of them all (x shared
// only when every timeline has the same kind of x: time or entries).
func Merge(reports []*Report, title, compareTitle, compare string) *Report {
	m := &Report{Title: title, Stacks: [][]string{}, Devices: []DeviceView{}, Compare: compare, CompareTitle: compareTitle}
	var info strings.Builder
	for fi, r := range reports {
		off := len(m.Stacks)
		m.Stacks = append(m.Stacks, r.Stacks...)
		fmt.Fprintf(&info, "== %s\n%s\n", r.Title, r.Info)
		for _, w := range r.Warnings {
			m.Warnings = append(m.Warnings, r.Title+": "+w)
		}
		for _, d := range r.Devices {
			d.File = r.Title
			d.Key = fmt.Sprintf("f%d_d%d", fi, d.Device)
			d.Groups = append([]Group{}, d.Groups...)
			for i := range d.Groups {
				if d.Groups[i].Stack >= 0 {
					d.Groups[i].Stack += off
				}
			}
			d.Leaks = append([]Leak{}, d.Leaks...)
			for i := range d.Leaks {
				if d.Leaks[i].Stack >= 0 {
					d.Leaks[i].Stack += off
				}
			}
			segs := make([]Segment, len(d.Segments))
			for i, sg := range d.Segments {
				sg.Blocks = append([]Block{}, sg.Blocks...)
				for j := range sg.Blocks {
					if sg.Blocks[j].Stack >= 0 {
						sg.Blocks[j].Stack += off
					}
				}
				segs[i] = sg
			}
			d.Segments = segs
			m.Devices = append(m.Devices, d)
		}
	}
	m.Info = info.String()
	// One scale for every timeline.
	var yMax, xMax int64
	kinds := map[bool]bool{}
	for _, d := range m.Devices {
		tl := d.Timeline
		if tl == nil || len(tl.X) == 0 {
			continue
		}
		kinds[tl.XIsTime] = true
		for _, col := range [][]int64{tl.Reserved, tl.Active, tl.Allocated} {
			for _, v := range col {
				yMax = max(yMax, v)
			}
		}
		xMax = max(xMax, tl.X[len(tl.X)-1])
	}
	for i := range m.Devices {
		m.Devices[i].YMax = yMax
		if len(kinds) == 1 {
			m.Devices[i].XMax = xMax
			if kinds[true] {
				// One time scale for every file: the timelines open on
				// time, not on the entry index.
				m.Devices[i].XByIndex = false
			}
		}
	}
	return m
}
