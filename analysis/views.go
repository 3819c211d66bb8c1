package analysis

import (
	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// Leaks is leaks.Leaks over the File's replay of device: the allocations
// live after entry opts.At grouped by stack and ranked. The replay must
// be Full (the File's default). The error is the replay's or leaks.Leaks'.
func (f *File) Leaks(device int, opts leaks.LeakOptions) (*leaks.LeakReport, error) {
	r, err := f.Replay(device)
	if err != nil {
		return nil, err
	}
	return leaks.Leaks(f.Snap, r, opts)
}

// WhatIf is whatif.Analyze over the File's replay of device: its trace
// simulated under the file's settings and under opts.Confs or the
// candidates. It returns whatif.Analyze's errors (no trace, a --conf that
// does not parse).
func (f *File) WhatIf(device int, opts whatif.Options) (*whatif.Result, error) {
	r, err := f.Replay(device)
	if err != nil {
		r = nil // whatif.Analyze replays it and says why it cannot
	}
	return whatif.Analyze(f.Snap, device, r, opts)
}

// Side measures device at moment m, as `diff` and `ranks` compare it
// (compare.MeasureSide over the File's replay; any replay.Mode but
// StatsOnly). A device without trace entries is measured at the state the
// file holds, whatever the moment: there is no other. Errors are the
// replay's, m.Resolve's (a *steps.MomentError when the file lacks the
// moment) and compare.MeasureSide's.
func (f *File) Side(device int, m steps.Moment, so compare.SideOptions) (*compare.Side, error) {
	if !f.HasTrace(device) {
		return compare.MeasureFileState(f.Snap, device, so), nil
	}
	r, err := f.Replay(device)
	if err != nil {
		return nil, err
	}
	at, err := sideMoment(f.Snap, r, m)
	if err != nil {
		return nil, err
	}
	return compare.MeasureSide(f.Snap, r, at, so)
}

// sideMoment is m.Resolve, except that a replay without trace entries is
// taken at the state the file holds whatever the moment (-1: there is no
// other).
func sideMoment(s *snapshot.Snapshot, r *replay.Result, m steps.Moment) (int, error) {
	if len(r.Allocated) == 0 && r.PeakIndex < 0 {
		return -1, nil
	}
	return m.Resolve(s, r)
}
