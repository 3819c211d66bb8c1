package html

import (
	"fmt"
	"strings"

	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/analyze/timeline"
	"github.com/snapview/snapview/internal/units"
)

// Merge makes one report of several files' reports (each from
// [Build]), with compare (the text of `snapview ranks` or `snapview
// diff`) on top under title. Each device section is labelled with its
// file (the report's Title) and every timeline is drawn on the same
// scale: the highest bytes and the longest trace of them all (x shared
// only when every timeline has the same kind of x: time or entries), on
// one clock when every trace has times (oneClock).
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
			d.Segments = shiftSegmentStacks(d.Segments, off)
			d.Singles = append([]SingleAlloc{}, d.Singles...)
			for i := range d.Singles {
				if d.Singles[i].Stack >= 0 {
					d.Singles[i].Stack += off
				}
			}
			d.Inspect = shiftInspectStacks(d.Inspect, off)
			m.Devices = append(m.Devices, d)
		}
		for _, h := range r.Hosts {
			h.File = r.Title
			h.Key = fmt.Sprintf("f%d_host", fi)
			h.Live = append([]HostLive{}, h.Live...)
			for i := range h.Live {
				if h.Live[i].Stack >= 0 {
					h.Live[i].Stack += off
				}
			}
			m.Hosts = append(m.Hosts, h)
		}
	}
	m.Info = info.String()
	oneClock(m.Devices)
	setScale(m.Devices)
	return m
}

// shiftSegmentStacks returns a copy of segs whose blocks' stacks index a
// stack table off entries further on (Merge).
func shiftSegmentStacks(segs []Segment, off int) []Segment {
	out := make([]Segment, len(segs))
	for i, sg := range segs {
		sg.Blocks = append([]Block{}, sg.Blocks...)
		for j := range sg.Blocks {
			if sg.Blocks[j].Stack >= 0 {
				sg.Blocks[j].Stack += off
			}
		}
		out[i] = sg
	}
	return out
}

// shiftInspectStacks returns a copy of in whose allocations' and states'
// stacks index a stack table off entries further on (Merge): the state
// panel of a file's device shows that file's stacks.
func shiftInspectStacks(in *Inspect, off int) *Inspect {
	if in == nil {
		return nil
	}
	c := *in
	c.Allocs = append([][7]int64{}, in.Allocs...)
	for i := range c.Allocs {
		if c.Allocs[i][6] >= 0 {
			c.Allocs[i][6] += int64(off)
		}
	}
	c.States = append([]InspectState{}, in.States...)
	for i := range c.States {
		c.States[i].Segments = shiftSegmentStacks(c.States[i].Segments, off)
	}
	return &c
}

// oneClock puts the timelines of devs on one clock when every one has
// times and they overlap in time: time_us itself (microseconds since the epoch, one clock for the
// processes of a machine), from the earliest first entry of them all, as
// `snapview ranks` compares peaks; a rank that started recording later
// starts further right.
func oneClock(devs []DeviceView) {
	var origin, latestFirst, earliestLast int64
	n := 0
	for _, d := range devs {
		if d.Timeline == nil || len(d.Timeline.X) == 0 {
			continue
		}
		if !d.HasTime {
			return
		}
		last := d.FirstUS + d.Timeline.X[len(d.Timeline.X)-1]
		if n == 0 {
			origin, latestFirst, earliestLast = d.FirstUS, d.FirstUS, last
		}
		origin, latestFirst, earliestLast = min(origin, d.FirstUS), max(latestFirst, d.FirstUS), min(earliestLast, last)
		n++
	}
	if latestFirst > earliestLast {
		// Traces that do not overlap in time (two runs, as a diff
		// compares) are not the ranks of one run: each keeps its own
		// start.
		return
	}
	for i := range devs {
		if d := &devs[i]; d.Timeline != nil && len(d.Timeline.X) > 0 {
			shiftX(d, d.FirstUS-origin)
			d.AxisNote = fmt.Sprintf("The x axis is one clock for every file (time_us): seconds since the earliest first entry of them all; this trace's first entry is at %s. Switch to entries above the chart.",
				units.Seconds(d.FirstUS-origin, 3))
		}
	}
}

// AlignSteps redraws the timelines of a report of several files (from
// [Merge]) aligned on their steps, as `snapview report --align step`
// asks: each timeline moves right so that its first step starts where
// the latest first step of them all does (the steps `snapview leaks`
// finds: annotations or a repeating allocation). It returns an error
// naming the first timeline without steps or without times.
func AlignSteps(m *Report) error {
	var (
		drawn []*DeviceView
		first []int64
		has   []bool
	)
	for i := range m.Devices {
		d := &m.Devices[i]
		if d.Timeline == nil || len(d.Timeline.X) == 0 {
			continue
		}
		drawn = append(drawn, d)
		ok := d.Timeline.XIsTime && len(d.Steps) > 0
		has = append(has, ok)
		if ok {
			first = append(first, d.Steps[0].X0)
		} else {
			first = append(first, 0)
		}
	}
	at, shifts, missing := steps.AlignFirst(first, has)
	if missing >= 0 {
		d := drawn[missing]
		return fmt.Errorf("%s device %d: no steps on a time axis to align on (the trace has no record_function step annotations or repeating allocation, or no time_us)", d.File, d.Device)
	}
	for k, d := range drawn {
		shiftX(d, shifts[k])
		d.AxisNote = fmt.Sprintf("The timelines are aligned on their first step (--align step), which starts at %s on every one; this trace is moved %s to the right. Switch to entries above the chart.",
			units.Seconds(at, 3), units.Seconds(shifts[k], 3))
	}
	setScale(m.Devices)
	return nil
}

// shiftX moves every x value of a device's timeline dx to the right (in
// the unit of Marker.X; the trace entries of an index axis stay).
func shiftX(d *DeviceView, dx int64) {
	if dx == 0 || !d.Timeline.XIsTime {
		return
	}
	tl := *d.Timeline
	tl.X = shifted(tl.X, dx)
	tl.Levels = append([]timeline.Level{}, tl.Levels...)
	for k := range tl.Levels {
		tl.Levels[k].X = shifted(tl.Levels[k].X, dx)
	}
	d.Timeline = &tl
	if d.Peak != nil {
		p := *d.Peak
		p.X += dx
		d.Peak = &p
	}
	if d.Zoom != nil {
		z := *d.Zoom
		z.X0, z.X1 = z.X0+dx, z.X1+dx
		d.Zoom = &z
	}
	d.OOMs = append([]Marker{}, d.OOMs...)
	for k := range d.OOMs {
		d.OOMs[k].X += dx
	}
	for _, rs := range []*[]Range{&d.Annotations, &d.Steps} {
		*rs = append([]Range{}, (*rs)...)
		for k := range *rs {
			(*rs)[k].X0 += dx
			(*rs)[k].X1 += dx
		}
	}
	d.Singles = append([]SingleAlloc{}, d.Singles...)
	for k := range d.Singles {
		if d.Singles[k].X0 >= 0 {
			d.Singles[k].X0 += dx
		}
		if d.Singles[k].X1 >= 0 {
			d.Singles[k].X1 += dx
		}
	}
	if d.Monitor != nil {
		mon := *d.Monitor
		mon.Overlay = append([][2]float64{}, mon.Overlay...)
		for k := range mon.Overlay {
			mon.Overlay[k][0] += float64(dx) / 1e3
		}
		d.Monitor = &mon
	}
}

func shifted(x []int64, dx int64) []int64 {
	out := make([]int64, len(x))
	for i, v := range x {
		out[i] = v + dx
	}
	return out
}

// setScale gives every timeline of devs the same scale: the highest bytes
// and the furthest x of them all (x shared only when every timeline has
// the same kind of x: time or entries).
func setScale(devs []DeviceView) {
	var yMax, xMax int64
	kinds := map[bool]bool{}
	for _, d := range devs {
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
	// One opening window: the union of the windows the timelines open on
	// (each its whole trace when it has none).
	var zoom *Zoom
	if len(kinds) == 1 && kinds[true] {
		for _, d := range devs {
			if d.Zoom != nil {
				zoom = &Zoom{X0: d.Zoom.X0, X1: d.Zoom.X1, Note: "Every timeline opens on the same window, the part with activity in any of them. Drag the slider's handles or wheel out to see the whole traces."}
				break
			}
		}
		for _, d := range devs {
			if zoom == nil || d.Timeline == nil || len(d.Timeline.X) == 0 {
				continue
			}
			x0, x1 := d.Timeline.X[0], d.Timeline.X[len(d.Timeline.X)-1]
			if d.Zoom != nil {
				x0, x1 = d.Zoom.X0, d.Zoom.X1
			}
			zoom.X0, zoom.X1 = min(zoom.X0, x0), max(zoom.X1, x1)
		}
	}
	for i := range devs {
		devs[i].YMax = yMax
		if zoom != nil && devs[i].Timeline != nil {
			z := *zoom
			devs[i].Zoom = &z
		}
		if len(kinds) == 1 {
			devs[i].XMax = xMax
			if kinds[true] {
				// One time scale for every file: the timelines open on
				// time, not on the entry index.
				devs[i].XByIndex = false
			}
		}
	}
}
