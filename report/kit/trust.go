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
