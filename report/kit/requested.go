package kit

import (
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
)

// The requested bytes a file gives (each live block's requested_size, and
// every figure summed from them) are as trusted as stats.Known.Requested
// says, decided once per device by replay.DecideTrust. Every view marks
// them the same way: "?" for the figure in a text table, a note that says
// why under it ("Requested: unknown (...)."), null in JSON beside a
// "requested" verdict.

// RequestedBytes formats a requested figure (bytes) for a text table:
// "?" when the device's requested sizes are unknown.
func RequestedBytes(v int64, k stats.Known) string {
	if k.Requested == stats.Unknown {
		return "?"
	}
	return units.Bytes(v)
}

// RequestedNote is the note a text view prints under requested figures it
// marked "?", "" when it marked none.
func RequestedNote(k stats.Known) string {
	if k.Requested != stats.Unknown {
		return ""
	}
	return "Requested: unknown (" + k.RequestedWhy + ")."
}

// RequestedJSON is a requested figure for JSON: null when unknown.
func RequestedJSON(v int64, k stats.Known) *int64 {
	return KnownOr(v, k.Requested)
}

// RequestedVerdictJSON is the "requested" verdict of a device in JSON:
// "exact" or "unknown", and why.
func RequestedVerdictJSON(k stats.Known) HistoryJSON {
	return HistoryJSON{Exactness: k.Requested.String(), Why: k.RequestedWhy}
}
