package slice

import (
	"context"
	"fmt"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// Request is the window `snapview slice` cuts, as its flags give it:
// Around (with Entries) or From and To, each nil when not given.
type Request struct {
	From, To, Around *steps.Moment
	// FromText and ToText are From and To as the user wrote them, for
	// errors ("" when not given).
	FromText, ToText string
	// Entries is the window's size with Around (at least 1).
	Entries int
}

// Mode is the least replay.Mode that resolves the request's moments:
// Full for step:K (the steps are found from the allocations), Peaks for
// peak and oom, StatsOnly otherwise.
func (q Request) Mode() replay.Mode {
	mode := replay.StatsOnly
	for _, m := range []*steps.Moment{q.From, q.To, q.Around} {
		switch {
		case m == nil:
		case m.Kind == steps.MomentStep:
			return replay.Full
		case m.Kind == steps.MomentPeak || m.Kind == steps.MomentOOM:
			mode = replay.Peaks
		}
	}
	return mode
}

// FlagError is an error of resolving the moment of the flag Flag
// ("--from"): Err is steps.Moment's (a *steps.MomentError, whose message
// names --at). Resolve is true when it came from Moment.Resolve, false
// from Moment.ResolveFirst.
type FlagError struct {
	Flag    string
	Moment  steps.Moment
	Resolve bool
	Err     error
}

func (e *FlagError) Error() string { return e.Flag + ": " + e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// WindowError is a window that cannot be cut: empty, reversed, or past
// the trace; Msg names the flags.
type WindowError struct{ Msg string }

func (e *WindowError) Error() string { return e.Msg }

// Window resolves the request on r's device, r a replay of s in Mode or
// more: the entries Around names, centred (see Around), else From to To
// (the first entry at or after From, the last at or before To; the
// trace's ends when not given). Errors: a *FlagError for a moment that
// does not resolve, a *WindowError for a window that is empty or
// reversed.
func (q Request) Window(s *snapshot.Snapshot, r *replay.Result) (Window, error) {
	dev, n := r.Device, len(s.Traces[r.Device])
	resolve := func(flag string, m steps.Moment) (int, error) {
		i, err := m.Resolve(s, r)
		if err != nil {
			return 0, &FlagError{Flag: flag, Moment: m, Resolve: true, Err: err}
		}
		return i, nil
	}
	if q.Around != nil {
		i, err := resolve("--around", *q.Around)
		if err != nil {
			return Window{}, err
		}
		return Around(dev, max(i, 0), q.Entries, n), nil
	}
	w := Window{Device: dev, From: 0, To: n - 1}
	if q.From != nil {
		if _, err := resolve("--from", *q.From); err != nil {
			return w, err
		}
		i, err := q.From.ResolveFirst(s, r)
		if err != nil {
			return w, &FlagError{Flag: "--from", Moment: *q.From, Err: err}
		}
		if i >= n {
			return w, &WindowError{fmt.Sprintf("--from %s: device %d has no entry at or after it (its last is at %s)", q.FromText, dev, lastTime(s.Traces[dev]))}
		}
		w.From = i
	}
	if q.To != nil {
		i, err := resolve("--to", *q.To)
		if err != nil {
			return w, err
		}
		if i < 0 {
			return w, &WindowError{fmt.Sprintf("--to %s: that is before device %d's first entry: the window would be empty", q.ToText, dev)}
		}
		w.To = i
	}
	from, to := or(q.FromText, "(the first entry)"), or(q.ToText, "(the last entry)")
	if w.From == w.To+1 {
		return w, &WindowError{fmt.Sprintf("no entry of device %d lies between --from %s and --to %s (entry %d is the first at or after --from, entry %d the last at or before --to): the window would be empty", dev, from, to, w.From, w.To)}
	}
	if w.From > w.To {
		return w, &WindowError{fmt.Sprintf("--from %s comes after --to %s on device %d (entry %d after entry %d)", from, to, dev, w.From, w.To)}
	}
	return w, nil
}

// or is s, or def when s is "".
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// lastTime is the time_us of a trace's last entry, for messages.
func lastTime(t []snapshot.TraceEntry) string {
	if len(t) == 0 || t[len(t)-1].Flags&snapshot.FlagTime == 0 {
		return "no time"
	}
	return fmt.Sprintf("time_us %d", t[len(t)-1].TimeUS)
}

// Cut replays device dev of s as far as the request needs (Mode) and
// cuts its window (Window, then the package's Cut): the slice, the window
// and what a reader of it cannot tell (Notes). Errors: the replay's,
// Window's (*FlagError, *WindowError), ctx's, Cut's.
func (q Request) Cut(ctx context.Context, s *snapshot.Snapshot, dev int) (*snapshot.Snapshot, Window, []string, error) {
	r, err := replay.Run(s, dev, replay.Options{Mode: q.Mode()})
	if err != nil {
		return nil, Window{}, nil, err
	}
	w, err := q.Window(s, r)
	if err != nil {
		return nil, w, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, w, nil, err
	}
	sl, err := Cut(s, r, w)
	if err != nil {
		return nil, w, nil, err
	}
	return sl, w, Notes(s, r, w), nil
}
