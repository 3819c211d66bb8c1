package whatif

import (
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// FitKind says how a setting fares over the caps the run may have had.
type FitKind int

const (
	// FitsNone: a request fails at every cap of the interval, and no cap
	// above it was found under which the setting fits.
	FitsNone FitKind = iota
	// FitsAll: no request fails at the interval's lower bound nor at its
	// upper bound (with one cap: under it).
	FitsAll
	// FitsFrom: the setting fits if the cap is at least SettingFit.From
	// (within the interval, or above it).
	FitsFrom
)

// SettingFit is one row of a [Verdict].
type SettingFit struct {
	// Row indexes Result.Rows.
	Row  int
	Conf string
	Kind FitKind
	// From is the smallest cap under which the setting fits, bytes, for
	// FitsFrom (searched from the interval's lower bound up, to 2 MiB);
	// FromExact is false when the search stopped on its budget (From is
	// then a cap it fits under, the smallest lying above FromLow).
	From      int64
	FromExact bool
	FromLow   int64
	// PeakReserved is the row's peak reserved at the lower bound, bytes.
	PeakReserved int64
}

// Verdict is the what-if answer to "which setting would have avoided the
// OOM?", stated over the caps the file allows: every view that gives it
// (whatif, state --at oom, the report's OOM marker) takes it from here.
type Verdict struct {
	// Lo and Hi are the caps it holds over, bytes, both included (Lo ==
	// Hi: one cap; both 0: no cap). Source is Result.LimitSource.
	Lo, Hi int64
	Source string
	// Own is how the file's own settings fare (Row 0).
	Own SettingFit
	// Settings are the other rows, in the table's order.
	Settings []SettingFit
	// Best indexes Result.Rows: the setting to recommend (Result.Best), -1
	// when none does better than the file's own.
	Best int
	// Uncapped is the peak reserved of the file's settings with no cap,
	// bytes, when simulated (the file's row fails under the cap), else 0.
	Uncapped int64
	// Approximate is true when the self-check diverges: every figure is
	// then approximate. TraceOnly is true when the trace is not the whole
	// run (the file's history is not exact): the verdict holds over the
	// part of the run it covers.
	Approximate, TraceOnly bool
}

// fitOf says how row i fares.
func (r *Result) fitOf(i int) SettingFit {
	row := &r.Rows[i]
	f := SettingFit{Row: i, Conf: row.Conf, PeakReserved: row.PeakReserved, FromExact: true}
	switch c := row.Cap; {
	case c == nil && row.Fits():
		f.Kind = FitsAll
	case c == nil:
		f.Kind = FitsNone
	case c.AtMin && c.AtMax:
		f.Kind = FitsAll
	case c.From > 0:
		f.Kind, f.From, f.FromExact, f.FromLow = FitsFrom, c.From, c.FromExact, c.FromLow
	default:
		f.Kind = FitsNone
	}
	return f
}

// Verdict returns the what-if verdict of r.
func (r *Result) Verdict() Verdict {
	v := Verdict{Lo: r.Limit, Hi: r.Limit, Source: r.LimitSource, Best: r.Best,
		Approximate: !r.SelfCheck.Exact, TraceOnly: r.Trust.History != stats.Exact}
	if b := r.Inferred; b != nil {
		v.Lo, v.Hi = b.Min, b.Max
	}
	v.Own = r.fitOf(0)
	for i := 1; i < len(r.Rows); i++ {
		v.Settings = append(v.Settings, r.fitOf(i))
	}
	if u := r.Uncapped; u != nil {
		v.Uncapped = u.PeakReserved
	}
	return v
}

// BestRow returns the row to recommend, nil when no setting tried does
// better than the file's own (see Result.Best).
func (r *Result) BestRow() *Row {
	if r.Best < 0 {
		return nil
	}
	return &r.Rows[r.Best]
}

// OOMVerdict is the what-if verdict on device of s as whatif, state --at
// oom and the report's OOM marker give it: the candidates simulated under
// the cap the file allows (msg, torch's OOM message, fixes it when not
// nil; else it is inferred, see Options.Limit), with the Result it comes
// from (its BestRow is the setting to recommend). r is the device's replay
// (nil: replayed here). The errors are Analyze's.
func OOMVerdict(s *snapshot.Snapshot, device int, r *replay.Result, msg *OOMMessage) (Verdict, *Result, error) {
	res, err := Analyze(s, device, r, Options{OOMMessage: msg})
	if err != nil {
		return Verdict{}, nil, err
	}
	return res.Verdict(), res, nil
}
