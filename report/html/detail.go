package html

// A long trace's timeline is drawn at full width from a few hundred
// points; the page redraws the part a zoom shows from the timeline's
// multi-resolution index (timeline.Level) and draws the largest
// allocations of the window on their own (DeviceView.Singles). They
// travel in a second JSON island, #snapview-detail, after the script (so
// that the charts are drawn before the browser parses it), which
// report.js reads only after the load event and the first paint: columns of integers, each written as the
// difference from the one before (most are 0 or small), bytes in a unit
// that divides every figure of the device (512 where the allocator's
// rounding makes every block a multiple of it).

// htmlDetail is the #snapview-detail island.
type htmlDetail struct {
	Devices []htmlDetailDevice `json:"devices"`
}

// htmlDetailDevice is one device's multi-resolution index and single
// allocations.
type htmlDetailDevice struct {
	// Section is the device's section id (htmlDataDevice.Section).
	Section string `json:"section"`
	// Unit is the bytes of one unit of the byte columns.
	Unit int64 `json:"unit"`
	// Levels are coarsest first; each has Buckets and Cols: the entry,
	// the time since the first entry in microseconds (0s without times),
	// reserved, active, allocated, then each group's bytes, in Unit,
	// delta-encoded.
	Levels []htmlDetailLevel `json:"levels"`
	// Singles are columns, delta-encoded, one value per allocation
	// ordered by start: start entry, end entry, free_completed entry,
	// start and end x in microseconds (or entries; -1: outside the
	// trace), size in Unit, requested bytes, address, stack, group.
	Singles [][]int64 `json:"singles"`
}

type htmlDetailLevel struct {
	Buckets int       `json:"buckets"`
	Cols    [][]int64 `json:"cols"`
}

// htmlDelta returns v with each element but the first replaced by its
// difference from the one before.
func htmlDelta(v []int64) []int64 {
	out := make([]int64, len(v))
	var prev int64
	for i, x := range v {
		out[i] = x - prev
		prev = x
	}
	return out
}

// htmlHasDetail says whether d has a multi-resolution index or single
// allocations for the detail island.
func htmlHasDetail(d *DeviceView) bool {
	return d.Timeline != nil && len(d.Timeline.Index) > 0 && (len(d.Timeline.Levels) > 0 || len(d.Singles) > 0)
}

// htmlDetailOf returns the detail island of the sections' devices that
// have a multi-resolution index or single allocations.
func htmlDetailOf(secs []htmlSection) htmlDetail {
	out := htmlDetail{Devices: []htmlDetailDevice{}}
	for _, sec := range secs {
		d := sec.DeviceView
		if !htmlHasDetail(d) {
			continue
		}
		tl := d.Timeline
		// The unit: 512 when it divides every byte figure drawn.
		unit := int64(512)
		check := func(v []int64) {
			for _, x := range v {
				if x%unit != 0 {
					unit = 1
					return
				}
			}
		}
		for _, lv := range tl.Levels {
			check(lv.Reserved)
			check(lv.Active)
			check(lv.Allocated)
			for _, g := range lv.Groups {
				check(g)
			}
		}
		for _, s := range d.Singles {
			check([]int64{s.Size})
		}
		div := func(v []int64) []int64 {
			out := make([]int64, len(v))
			for i, x := range v {
				out[i] = x / unit
			}
			return htmlDelta(out)
		}
		dd := htmlDetailDevice{Section: sec.ID, Unit: unit, Levels: []htmlDetailLevel{}, Singles: [][]int64{}}
		for _, lv := range tl.Levels {
			idx := make([]int64, len(lv.Index))
			for i, e := range lv.Index {
				idx[i] = int64(e)
			}
			x := lv.X
			if !tl.XIsTime {
				x = make([]int64, len(lv.Index))
			}
			cols := [][]int64{htmlDelta(idx), htmlDelta(x), div(lv.Reserved), div(lv.Active), div(lv.Allocated)}
			for _, g := range lv.Groups {
				cols = append(cols, div(g))
			}
			dd.Levels = append(dd.Levels, htmlDetailLevel{Buckets: lv.Buckets, Cols: cols})
		}
		if len(d.Singles) > 0 {
			cols := make([][]int64, 10)
			for _, s := range d.Singles {
				for k, v := range [...]int64{int64(s.Start), int64(s.End), int64(s.FreeCompleted), s.X0, s.X1,
					s.Size / unit, s.Requested, int64(s.Addr), int64(s.Stack), int64(s.Group)} {
					cols[k] = append(cols[k], v)
				}
			}
			for k := range cols {
				cols[k] = htmlDelta(cols[k])
			}
			dd.Singles = cols
		}
		out.Devices = append(out.Devices, dd)
	}
	return out
}
