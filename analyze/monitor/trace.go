package monitor

import (
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// TraceSeries returns a snapshot's allocated and reserved bytes after each
// trace entry of one device against the entry's time_us (microseconds
// since the Unix epoch), for [FindGap] and [Agree]. r is replay.Run's
// result for that device. Entries without a time_us, and those whose time
// goes back, are left out; the series are empty when the trace has no
// times (PyTorch before 2.2) or r does not match it.
func TraceSeries(trace []snapshot.TraceEntry, r *replay.Result) (allocated, reserved Series) {
	if r == nil || len(r.Reserved) != len(trace) || len(r.Allocated) != len(trace) {
		return Series{}, Series{}
	}
	for i, e := range trace {
		if e.Flags&snapshot.FlagTime == 0 {
			continue
		}
		if n := len(reserved.TimesUS); n > 0 && e.TimeUS < reserved.TimesUS[n-1] {
			continue
		}
		reserved.TimesUS = append(reserved.TimesUS, e.TimeUS)
		reserved.Values = append(reserved.Values, r.Reserved[i])
		allocated.Values = append(allocated.Values, r.Allocated[i])
	}
	allocated.TimesUS = reserved.TimesUS
	return allocated, reserved
}
