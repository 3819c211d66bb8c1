// Package hostview renders pinned host memory (info.HostMemory: the
// CUDA host allocator's segments and host_traces replayed under its
// rules) as text and JSON, the same section in every view that shows it:
// info, summary, state and leaks.
package hostview

import (
	"fmt"
	"io"
	"strings"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// Lines describes pinned host memory (info.HostMemory) in the words
// info and summary share, one paragraph per line; nil when the file has
// none.
func Lines(h *info.HostMemory) []string {
	lines := FigureLines(h)
	if l := LiveLine(h); l != "" && lines != nil && h.Entries > 0 {
		lines = append(lines, l)
	}
	return lines
}

// FigureLines are Lines less LiveLine: the segments, the trace and its
// replay's figures, for a view that lists the live pinned memory by stack
// in full (the HTML report); nil when the file has none.
func FigureLines(h *info.HostMemory) []string {
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
	lines = append(lines, fmt.Sprintf("Trace: %s%s (%s).",
		units.Plural(h.Entries, "entry"), span, strings.Join(acts, ", ")))
	return append(lines, hostReplayLines(h)...)
}

// hostReplayLines gives the figures of the host trace's replay under the
// caching host allocator's rules (hostreplay.Result), with the trust marks
// of the device's figures.
func hostReplayLines(h *info.HostMemory) []string {
	r := &h.Replay
	st := &r.Stats
	var lines []string
	switch r.Trust {
	case stats.Exact:
		lines = append(lines, fmt.Sprintf("Peak (replayed under the caching host allocator's rules): %s pinned in %s, %s handed out in %s (exact).",
			units.Bytes(st.AllocatedBytes.Peak), units.Plural(int(st.Allocations.Peak), "block"),
			units.Bytes(st.ActiveBytes.Peak), units.Plural(int(st.ActiveRequests.Peak), "request")))
	case stats.LowerBound:
		lines = append(lines, fmt.Sprintf("Peak (replayed under the caching host allocator's rules): at least %s pinned in %s, at least %s handed out in %s (lower bounds: %s).",
			units.Bytes(st.AllocatedBytes.Peak), units.Plural(int(st.Allocations.Peak), "block"),
			units.Bytes(st.ActiveBytes.Peak), units.Plural(int(st.ActiveRequests.Peak), "request"), r.Why))
	default:
		lines = append(lines, fmt.Sprintf("Peak: unknown (%s).", r.Why))
	}
	if r.Trust != stats.Unknown {
		lines = append(lines, fmt.Sprintf("Along the trace: %s blocks pinned (num_host_alloc), %s unpinned by empty_cache (num_host_free).",
			kit.FigureValue(st.NumHostAlloc, false, r.Trust), kit.FigureValue(st.NumHostFree, false, r.Trust)))
	}
	return lines
}

// LiveLine is the line of Lines that names the pinned memory handed out at
// the end by stack (the three largest), "" when none is.
func LiveLine(h *info.HostMemory) string {
	if len(h.Live) > 0 {
		const shown = 3
		parts := make([]string, 0, shown)
		for i, l := range h.Live {
			if i == shown {
				parts = append(parts, "and "+units.Plural(len(h.Live)-shown, "more stack"))
				break
			}
			where := "<no stack recorded>"
			if l.Where != "" {
				where = kit.Escape(l.Where)
			}
			parts = append(parts, fmt.Sprintf("%s in %s at %s", units.Bytes(l.Bytes), units.Plural(l.Count, "block"), where))
		}
		return "Handed out at the end, by stack: " + strings.Join(parts, "; ") + "."
	}
	return ""
}

// Write writes the pinned host memory section of summary and info
// (nothing when the file has none): the views of device memory (state,
// leaks, explain) show it after theirs, and alone for a file that holds
// host memory only. Errors are w's.
func Write(w io.Writer, h *info.HostMemory) error {
	lines := Lines(h)
	if lines == nil {
		return nil
	}
	ew := &kit.ErrWriter{W: w}
	ew.Printf("Pinned host memory (the CUDA host allocator)\n")
	for _, line := range lines {
		ew.Printf("%s", kit.WrapIndented("  ", line))
	}
	return ew.Err
}

// Has reports whether s holds pinned host memory: host_traces or
// host_segments entries.
func Has(s *snapshot.Snapshot) bool {
	return len(s.HostTraces) > 0 || len(s.HostSegments) > 0
}

// WriteAfter writes the section Write writes, after a blank line, when s
// holds pinned host memory (Has): the text views of device memory (state,
// leaks) end with it. Errors are w's.
func WriteAfter(w io.Writer, s *snapshot.Snapshot, h *info.HostMemory) error {
	if !Has(s) {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return Write(w, h)
}

// JSON is pinned host memory in the JSON of info, summary, state and
// leaks (the key "host").
type JSON struct {
	Segments       int             `json:"segments"`
	ReservedBytes  int64           `json:"reserved_bytes"`
	AllocatedBytes int64           `json:"allocated_bytes"`
	Allocations    int             `json:"allocations"`
	CachedBytes    int64           `json:"cached_bytes"`
	TraceEntries   int             `json:"trace_entries"`
	FirstTimeUS    int64           `json:"first_time_us"`
	LastTimeUS     int64           `json:"last_time_us"`
	Actions        []kit.CountJSON `json:"actions"`
	// Replay is host_traces replayed under the caching host allocator's
	// rules: torch.cuda.host_memory_stats()'s figures, with their trust.
	Replay hostReplayJSON `json:"replay"`
	// LiveByStack is the pinned memory handed out at the end, by stack.
	LiveByStack []hostStackJSON `json:"live_by_stack"`
}

// hostReplayJSON is a hostreplay.Result: current figures always, history
// (peak, allocated, freed, the num_ counters) left out when unknown.
type hostReplayJSON struct {
	kit.HistoryJSON
	Allocations       hostStatJSON `json:"allocations"`
	AllocatedBytes    hostStatJSON `json:"allocated_bytes"`
	ActiveRequests    hostStatJSON `json:"active_requests"`
	ActiveBytes       hostStatJSON `json:"active_bytes"`
	NumHostAlloc      *int64       `json:"num_host_alloc,omitempty"`
	NumHostFree       *int64       `json:"num_host_free,omitempty"`
	PeakEntry         int          `json:"peak_active_entry"`
	PeakReservedEntry int          `json:"peak_allocated_entry"`
	SeededBlocks      int          `json:"seeded_blocks"`
	Deviations        []string     `json:"deviations"`
	EndStateChecked   bool         `json:"end_state_checked"`
	EndStateEqual     bool         `json:"end_state_equal"`
}

// hostStatJSON is one host_memory_stats() family in bytes or counts.
type hostStatJSON struct {
	Current   int64  `json:"current"`
	Peak      *int64 `json:"peak,omitempty"`
	Allocated *int64 `json:"allocated,omitempty"`
	Freed     *int64 `json:"freed,omitempty"`
}

type hostStackJSON struct {
	Where  string `json:"where"`
	Bytes  int64  `json:"bytes"`
	Blocks int    `json:"blocks"`
}

func newHostStatJSON(s stats.Stat, e stats.Exactness) hostStatJSON {
	return hostStatJSON{Current: s.Current, Peak: kit.KnownOr(s.Peak, e), Allocated: kit.KnownOr(s.Allocated, e), Freed: kit.KnownOr(s.Freed, e)}
}

func newHostReplayJSON(h *info.HostMemory) (hostReplayJSON, []hostStackJSON) {
	r := &h.Replay
	e := r.Trust
	j := hostReplayJSON{
		HistoryJSON:    kit.HistoryJSON{Exactness: e.String(), Why: r.Why},
		Allocations:    newHostStatJSON(r.Stats.Allocations, e),
		AllocatedBytes: newHostStatJSON(r.Stats.AllocatedBytes, e),
		ActiveRequests: newHostStatJSON(r.Stats.ActiveRequests, e),
		ActiveBytes:    newHostStatJSON(r.Stats.ActiveBytes, e),
		NumHostAlloc:   kit.KnownOr(r.Stats.NumHostAlloc, e), NumHostFree: kit.KnownOr(r.Stats.NumHostFree, e),
		PeakEntry: r.PeakEntry, PeakReservedEntry: r.PeakReservedEntry, SeededBlocks: r.Seeded,
		Deviations: append([]string{}, r.Deviations...), EndStateChecked: r.Checked, EndStateEqual: r.Equal,
	}
	live := make([]hostStackJSON, len(h.Live))
	for i, l := range h.Live {
		live[i] = hostStackJSON{Where: l.Where, Bytes: l.Bytes, Blocks: l.Count}
	}
	return j, live
}

// NewJSON returns h as JSON, nil when the file has no pinned host
// memory.
func NewJSON(h *info.HostMemory) *JSON {
	if !h.Present {
		return nil
	}
	rj, live := newHostReplayJSON(h)
	return &JSON{
		Replay: rj, LiveByStack: live,
		Segments: h.Segments, ReservedBytes: h.ReservedBytes, AllocatedBytes: h.AllocatedBytes,
		Allocations: h.Allocations, CachedBytes: h.CachedBytes, TraceEntries: h.Entries,
		FirstTimeUS: h.FirstUS, LastTimeUS: h.LastUS, Actions: kit.CountsJSON(h.Actions),
	}
}
