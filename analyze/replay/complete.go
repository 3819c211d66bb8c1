package replay

import (
	"fmt"
	"github.com/snapview/snapview/analyze/allocator"
	"slices"
	"strings"

	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// Complete returns s, or a copy of s with what other producers leave out
// put back, and a note for each thing it put back:
//
//   - blocks lists that keep active blocks only (a slicer's window of a
//     big snapshot): the gaps between the active blocks of a segment, and
//     the whole of a segment without blocks, become inactive blocks. The
//     caching allocator merges free neighbours (free_block,
//     try_merge_blocks), so a gap is exactly one inactive block, and free =
//     reserved - active per segment. InactiveBlocksMissing is set.
//   - no segments at all but trace entries that leave some (an exporter
//     that writes device_traces only): each device's trace is replayed
//     from an empty allocator and its end state becomes the segments.
//     SegmentsFromTrace is set; the history figures are then lower bounds
//     (see [Result.Stats] Known).
//
// The notes are also added to the copy's Warnings. Every view takes the
// completed snapshot, so they agree on live
// allocations, free bytes and the largest free block. s is not changed.
func Complete(s *snapshot.Snapshot) (*snapshot.Snapshot, []string) {
	var notes []string
	out := s
	if gaps(s) {
		c := *s
		c.Segments = make([]snapshot.Segment, len(s.Segments))
		filled := 0
		for i := range s.Segments {
			c.Segments[i] = s.Segments[i]
			if fillGaps(&c.Segments[i]) {
				filled++
			}
		}
		c.InactiveBlocksMissing = true
		out = &c
		notes = append(notes, fmt.Sprintf("the blocks lists hold active blocks only (a slice?): inactive blocks are missing; "+
			"the free space of %d of %d segments is taken as reserved - active, one free block per gap", filled, len(s.Segments)))
	}
	if len(s.Segments) == 0 && !s.Legacy && slices.ContainsFunc(s.Traces, func(t []snapshot.TraceEntry) bool { return len(t) > 0 }) {
		c := *out
		c.Segments = nil
		devices, inconsistent, first := 0, 0, ""
		// A device with the same trace as an earlier one ends in that
		// one's segments: replayed once (Twins).
		twins := Twins(s)
		ended := map[int]struct {
			segs     []snapshot.Segment
			problems bool
		}{}
		for d := range s.Traces {
			if len(s.Traces[d]) == 0 {
				continue
			}
			if d < len(twins) && int(twins[d]) != d {
				e := ended[int(twins[d])]
				for _, sg := range e.segs {
					sg.Device = d
					sg.Blocks = slices.Clone(sg.Blocks)
					c.Segments = append(c.Segments, sg)
				}
				devices++
				if e.problems {
					inconsistent++
				}
				continue
			}
			r := &Result{Device: d, PeakIndex: -1, snap: s, cfg: newReplayConfig(s, s.Traces[d], allocator.InferRounding(s, d).Rule)}
			// A machine sized to the trace: a file may hold thousands of
			// devices with a few entries each.
			x := &runner{r: r, trace: s.Traces[d], m: newMachine(&r.cfg, min(1024, len(s.Traces[d]))), fileSeg: map[snapshot.Addr]*snapshot.Segment{}}
			x.runTo(len(s.Traces[d]) - 1)
			segs := x.m.export(d)
			c.Segments = append(c.Segments, segs...)
			devices++
			if twins != nil {
				ended[d] = struct {
					segs     []snapshot.Segment
					problems bool
				}{segs, x.m.nproblems > 0}
			}
			if x.m.nproblems > 0 {
				if inconsistent == 0 {
					first = fmt.Sprintf("device %d entry %s", d, strings.TrimPrefix(x.m.problems[0], "entry "))
				}
				inconsistent++
			}
		}
		if len(c.Segments) == 0 {
			// The trace ends with nothing reserved, as the file says
			// (empty_cache before the dump): nothing to put back.
			return withTwinsNote(out, notes)
		}
		note := fmt.Sprintf("the file has no segments: the end state comes from the trace alone (%s, %s left by it)",
			units.Plural(devices, "device"), units.Plural(len(c.Segments), "segment"))
		if inconsistent > 0 {
			note += fmt.Sprintf("; the trace of %s is not consistent from an empty allocator (%s)", units.Plural(inconsistent, "device"), first)
		}
		notes = append(notes, note)
		c.SegmentsFromTrace = true
		out = &c
	}
	if out != s && out.CheckValid() == nil {
		// The decoder's "inconsistent" warning was about the gaps.
		c := *out
		c.Warnings = slices.DeleteFunc(slices.Clone(s.Warnings), func(w string) bool {
			return strings.HasPrefix(w, "the file is inconsistent")
		})
		out = &c
	}
	return withTwinsNote(out, notes)
}

// withTwinsNote adds twinsNote's note to notes, and notes to the
// warnings of a copy of s.
func withTwinsNote(s *snapshot.Snapshot, notes []string) (*snapshot.Snapshot, []string) {
	if note := twinsNote(s); note != "" {
		notes = append(notes, note)
	}
	if len(notes) > 0 {
		c := *s
		c.Warnings = append(slices.Clone(s.Warnings), notes...)
		slices.Sort(c.Warnings)
		s = &c
	}
	return s, notes
}

// gaps reports whether a segment's blocks leave part of it uncovered while
// each block lies inside it.
func gaps(s *snapshot.Snapshot) bool {
	for i := range s.Segments {
		sg := &s.Segments[i]
		if len(sg.Blocks) == 0 {
			continue
		}
		var sum int64
		for j := range sg.Blocks {
			sum += sg.Blocks[j].Size
		}
		if sum < sg.TotalSize {
			return true
		}
	}
	return false
}

// fillGaps puts an inactive block in each gap of sg's blocks (in address
// order) and reports whether it added any. Blocks outside the segment or
// overlapping are left as they are.
func fillGaps(sg *snapshot.Segment) bool {
	blocks := slices.Clone(sg.Blocks)
	slices.SortFunc(blocks, func(a, b snapshot.Block) int { return cmpUint(uint64(a.Address), uint64(b.Address)) })
	end := sg.Address + snapshot.Addr(sg.TotalSize)
	out := make([]snapshot.Block, 0, 2*len(blocks)+1)
	next := sg.Address
	for _, b := range blocks {
		if b.Address < next || b.Address+snapshot.Addr(b.Size) > end {
			return false
		}
		if b.Address > next {
			out = append(out, snapshot.Block{Address: next, Size: int64(b.Address - next), State: snapshot.StateInactive})
		}
		out = append(out, b)
		next = b.Address + snapshot.Addr(b.Size)
	}
	if next < end {
		out = append(out, snapshot.Block{Address: next, Size: int64(end - next), State: snapshot.StateInactive})
	}
	if len(out) == len(sg.Blocks) {
		return false
	}
	sg.Blocks = out
	return true
}

// twinsNote says which devices of s have the same trace entries and
// segments as an earlier one (Twins), "" when none: their replays are
// copies of the earlier one's.
func twinsNote(s *snapshot.Snapshot) string {
	twins := Twins(s)
	var same []int
	for d, t := range twins {
		if int(t) != d {
			same = append(same, d)
		}
	}
	if len(same) == 0 {
		return ""
	}
	if len(same) == 1 {
		return fmt.Sprintf("device %d has the same trace entries and segments as device %d: it is replayed once and shares its figures", same[0], twins[same[0]])
	}
	return fmt.Sprintf("%s devices have the same trace entries and segments as an earlier device (%s; the first as device %d): each is replayed once and shares its figures",
		units.Int(len(same)), units.IntList(same), twins[same[0]])
}
