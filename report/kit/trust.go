package kit

import (
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
)

// How every view shows the one trust verdict (replay.DecideTrust): in
// words, as a mark beside a figure in text, and as an exactness in JSON.

// TrustText says in words how far the history figures (peaks, totals,
// the state at a trace entry) can be trusted, with the reason: the one
// wording every view uses for replay.DecideTrust's verdict.
func TrustText(k stats.Known) string {
	switch k.History {
	case stats.Exact:
		return "peaks and totals are exact (the replay ends in the file's segments)"
	case stats.LowerBound:
		return "peaks and totals are lower bounds: " + k.Why
	}
	if k.Why == "" {
		return "peaks and totals are unknown"
	}
	return "peaks and totals are unknown: " + k.Why
}

// trustMark is the mark a figure carries in text views: "" when exact,
// "+" for a lower bound (at least this much), "?" when unknown.
func trustMark(e stats.Exactness) string {
	switch e {
	case stats.LowerBound:
		return "+"
	case stats.Unknown:
		return "?"
	}
	return ""
}

// FigureValue formats a figure with its trust mark.
func FigureValue(v int64, bytes bool, e stats.Exactness) string {
	if e == stats.Unknown {
		return "?"
	}
	s := units.Int(v)
	if bytes {
		s = units.Bytes(v)
	}
	return s + trustMark(e)
}

// FigureRange formats a figure that the input bounds from both sides, at
// least lo and at most hi: "LO to HI" (num_alloc_retries where a trace
// bounds it: stats.MemoryStats.RetriesRange). It is the one way every view
// writes such an interval: summary's torch header, ranks, check.
func FigureRange(lo, hi int64, bytes bool) string {
	if bytes {
		return units.Bytes(lo) + " to " + units.Bytes(hi)
	}
	return units.Int(lo) + " to " + units.Int(hi)
}

// FigureValueMax is FigureValue for a figure that may also be bounded from
// above: a lower bound v with hi > v (stats.Figure.Max) is the interval
// FigureRange writes.
func FigureValueMax(v, hi int64, bytes bool, e stats.Exactness) string {
	if e == stats.LowerBound && hi > v {
		return FigureRange(v, hi, bytes)
	}
	return FigureValue(v, bytes, e)
}

// RetriesValue formats st's num_alloc_retries with its trust mark, or as
// the interval the trace bounds it to (stats.MemoryStats.RetriesRange):
// "1 to 3".
func RetriesValue(st *stats.MemoryStats) string {
	if lo, hi, ok := st.RetriesRange(); ok {
		return FigureRange(lo, hi, false)
	}
	return FigureValue(st.NumAllocRetries, false, st.Known.NumAllocRetries)
}

// KnownOr returns &v, or nil (JSON null) when v is unknown.
func KnownOr[T any](v T, e stats.Exactness) *T {
	if e == stats.Unknown {
		return nil
	}
	return &v
}

// HistoryJSON is a verdict in JSON: "exact", "lower_bound" or
// "unknown", and why.
type HistoryJSON struct {
	Exactness string `json:"exactness"`
	Why       string `json:"why,omitempty"`
}

// FigureJSON is one memory_stats() figure: value is null when unknown.
type FigureJSON struct {
	Value     *int64 `json:"value"`
	Exactness string `json:"exactness"`
	// AtMost, for a lower bound that the input also bounds from above
	// (num_alloc_retries: stats.MemoryStats.RetriesRange), is the most
	// the figure can be.
	AtMost *int64 `json:"at_most,omitempty"`
}
