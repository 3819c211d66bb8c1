package report

import (
	"fmt"
	"strings"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/internal/units"
)

// hostLines describes pinned host memory (info.HostMemory) in the words
// info and summary share, one paragraph per line; nil when the file has
// none.
func hostLines(h *info.HostMemory) []string {
	if !h.Present {
		return nil
	}
	lines := []string{fmt.Sprintf("Segments: %s, %s pinned; %s allocated to %s, %s cached for reuse.",
		units.Plural(h.Segments, "segment"), units.Bytes(h.ReservedBytes), units.Bytes(h.AllocatedBytes),
		units.Plural(h.Allocations, "allocation"), units.Bytes(h.CachedBytes))}
	if h.Entries == 0 {
		return append(lines, "Trace: no entries.")
	}
	span := ""
	if h.FirstUS != 0 && h.LastUS >= h.FirstUS {
		span = " over " + units.Span(h.LastUS-h.FirstUS)
	}
	acts := make([]string, len(h.Actions))
	for i, a := range h.Actions {
		acts[i] = a.Name + " " + units.Int(a.Count)
	}
	lines = append(lines, fmt.Sprintf("Trace: %s%s (%s); at most %s requested at once along it.",
		units.Plural(h.Entries, "entry"), span, strings.Join(acts, ", "), units.Bytes(h.PeakAllocatedBytes)))
	return lines
}

// hostJSON is pinned host memory in summary and info JSON.
type hostJSON struct {
	Segments           int         `json:"segments"`
	ReservedBytes      int64       `json:"reserved_bytes"`
	AllocatedBytes     int64       `json:"allocated_bytes"`
	Allocations        int         `json:"allocations"`
	CachedBytes        int64       `json:"cached_bytes"`
	TraceEntries       int         `json:"trace_entries"`
	FirstTimeUS        int64       `json:"first_time_us"`
	LastTimeUS         int64       `json:"last_time_us"`
	Actions            []countJSON `json:"actions"`
	PeakRequestedBytes int64       `json:"peak_requested_bytes"`
}

// newHostJSON returns nil when the file has no pinned host memory.
func newHostJSON(h *info.HostMemory) *hostJSON {
	if !h.Present {
		return nil
	}
	return &hostJSON{
		Segments: h.Segments, ReservedBytes: h.ReservedBytes, AllocatedBytes: h.AllocatedBytes,
		Allocations: h.Allocations, CachedBytes: h.CachedBytes, TraceEntries: h.Entries,
		FirstTimeUS: h.FirstUS, LastTimeUS: h.LastUS, Actions: countsJSON(h.Actions),
		PeakRequestedBytes: h.PeakAllocatedBytes,
	}
}
