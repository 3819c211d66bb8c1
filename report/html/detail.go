package html

import (
	"encoding/json"
	"strconv"
)

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

// htmlHasDetail says whether d has a multi-resolution index or single
// allocations for the detail island.
func htmlHasDetail(d *DeviceView) bool {
	return d.Timeline != nil && len(d.Timeline.Index) > 0 && (len(d.Timeline.Levels) > 0 || len(d.Singles) > 0)
}

// htmlDetailJSON returns the detail island of the sections' devices that
// have a multi-resolution index or single allocations: htmlDetail as
// encoding/json writes it, written column by column without building it
// (on the 2M-entry file 140,000 points of 16 columns and 8,618 single
// allocations: the columns, their differences and json.Marshal's
// reflection cost more memory and time than the rest of the page).
func htmlDetailJSON(secs []htmlSection) ([]byte, error) {
	// About 3.5 bytes a figure (most differences are small): room for
	// them up front rather than doubling up to the island's size.
	size := 1 << 10
	for _, sec := range secs {
		if d := sec.DeviceView; htmlHasDetail(d) {
			for _, lv := range d.Timeline.Levels {
				size += 4 * len(lv.Index) * (5 + len(lv.Groups))
			}
			size += 4 * 10 * len(d.Singles)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"devices":[`...)
	first := true
	for _, sec := range secs {
		d := sec.DeviceView
		if !htmlHasDetail(d) {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
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
			if s.Size%unit != 0 {
				unit = 1
			}
		}
		section, err := json.Marshal(sec.ID)
		if err != nil {
			return nil, err
		}
		b = append(b, `{"section":`...)
		b = append(b, section...)
		b = append(b, `,"unit":`...)
		b = strconv.AppendInt(b, unit, 10)
		b = append(b, `,"levels":[`...)
		for k, lv := range tl.Levels {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"buckets":`...)
			b = strconv.AppendInt(b, int64(lv.Buckets), 10)
			b = append(b, `,"cols":[`...)
			n := len(lv.Index)
			b = htmlAppendDeltas(b, n, func(i int) int64 { return int64(lv.Index[i]) })
			b = append(b, ',')
			b = htmlAppendDeltas(b, n, func(i int) int64 {
				if !tl.XIsTime {
					return 0
				}
				return lv.X[i]
			})
			for _, col := range append([][]int64{lv.Reserved, lv.Active, lv.Allocated}, lv.Groups...) {
				b = append(b, ',')
				b = htmlAppendDeltas(b, n, func(i int) int64 { return col[i] / unit })
			}
			b = append(b, "]}"...)
		}
		b = append(b, `],"singles":[`...)
		if ss := d.Singles; len(ss) > 0 {
			fields := [...]func(s *SingleAlloc) int64{
				func(s *SingleAlloc) int64 { return int64(s.Start) },
				func(s *SingleAlloc) int64 { return int64(s.End) },
				func(s *SingleAlloc) int64 { return int64(s.FreeCompleted) },
				func(s *SingleAlloc) int64 { return s.X0 },
				func(s *SingleAlloc) int64 { return s.X1 },
				func(s *SingleAlloc) int64 { return s.Size / unit },
				func(s *SingleAlloc) int64 { return s.Requested },
				func(s *SingleAlloc) int64 { return int64(s.Addr) },
				func(s *SingleAlloc) int64 { return int64(s.Stack) },
				func(s *SingleAlloc) int64 { return int64(s.Group) },
			}
			for k, f := range fields {
				if k > 0 {
					b = append(b, ',')
				}
				b = htmlAppendDeltas(b, len(ss), func(i int) int64 { return f(&ss[i]) })
			}
		}
		b = append(b, "]}"...)
	}
	return append(b, "]}"...), nil
}

// htmlAppendDeltas appends the JSON array of v(0), v(1)-v(0), ...,
// v(n-1)-v(n-2).
func htmlAppendDeltas(b []byte, n int, v func(i int) int64) []byte {
	b = append(b, '[')
	var prev int64
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		x := v(i)
		b = strconv.AppendInt(b, x-prev, 10)
		prev = x
	}
	return append(b, ']')
}
