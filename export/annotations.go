package export

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// entryRanges returns, for each trace entry of device, the innermost
// record_function range (Ranges: external_annotations START/END pairs)
// open at its time_us, as an index into ranges, -1 outside any; nil when
// the device has no range or its trace no time_us. Innermost is the range
// that started last among those still open (START <= time_us < END; an
// unterminated range runs to the last entry).
func entryRanges(s *snapshot.Snapshot, device int) (ranges []Range, at []int32) {
	trace := replay.DeviceTrace(s, device)
	if len(trace) == 0 || trace[0].Flags&snapshot.FlagTime == 0 || len(s.Annotations) == 0 {
		return nil, nil
	}
	ranges = Ranges(s, device, trace[len(trace)-1].TimeUS)
	if len(ranges) == 0 {
		return nil, nil
	}
	order := make([]int32, len(ranges))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(ranges[a].StartUS, ranges[b].StartUS) })
	at = make([]int32, len(trace))
	var stack []int32
	next := 0
	for i := range trace {
		t := trace[i].TimeUS
		for next < len(order) && ranges[order[next]].StartUS <= t {
			stack = append(stack, order[next])
			next++
		}
		for len(stack) > 0 && !ranges[stack[len(stack)-1]].Contains(t) {
			stack = stack[:len(stack)-1]
		}
		at[i] = -1
		if len(stack) > 0 {
			at[i] = stack[len(stack)-1]
		}
	}
	return ranges, at
}

// annotLabels names the record_function range and the annotate labels of
// allocations of one device, for pprof labels.
type annotLabels struct {
	s      *snapshot.Snapshot
	r      *replay.Result
	ranges []Range
	at     []int32
}

func newAnnotLabels(s *snapshot.Snapshot, r *replay.Result) annotLabels {
	ranges, at := entryRanges(s, r.Device)
	return annotLabels{s: s, r: r, ranges: ranges, at: at}
}

// rangeOf is the innermost record_function range open at a's alloc entry,
// "" when none (or a is older than the trace).
func (l *annotLabels) rangeOf(a *replay.Allocation) string {
	if l.at == nil || a.AllocIndex < 0 || a.AllocIndex >= len(l.at) || l.at[a.AllocIndex] < 0 {
		return ""
	}
	return l.ranges[l.at[a.AllocIndex]].Name
}

// annotationOf is the label of the annotate entries made on a at or
// before entry i (replay.AnnotationLabel), "" when none.
func (l *annotLabels) annotationOf(a *replay.Allocation, i int) string {
	if len(a.Annotations) == 0 {
		return ""
	}
	return replay.AnnotationLabel(a.AnnotationsAt(l.s, i))
}
