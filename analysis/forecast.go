package analysis

import (
	"context"
	"errors"

	"github.com/snapview/snapview/analyze/forecast"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// ForecastInput is one FILE=VALUE argument of `snapview forecast`: a
// snapshot and the batch size or sequence length it was recorded at.
type ForecastInput struct {
	Path  string
	Value int64
}

// Forecast forecasts peak memory at fo.Targets (or the largest value
// under fo.Limit) from the snapshots in, as `snapview forecast` does:
// each file loaded through open, one at a time (read into the series,
// then dropped), device fo.Device replayed (dc, when set, must be in the
// file). It returns the files' warnings as notes. A fault of the files
// given together (forecast.InputError) and a device a file lacks are
// *UsageErrors; forecast.Series.Add's errors name the file themselves.
func Forecast(ctx context.Context, open Open, in []ForecastInput, fo forecast.Options, dc DeviceChoice) (*forecast.Result, []Note, error) {
	var notes []Note
	series := forecast.NewSeries(fo)
	for _, p := range in {
		// Add's errors name the files themselves: they are kept out of
		// open, which would name the file again.
		var addErr error
		err := open(ctx, p.Path, func(s *snapshot.Snapshot, src Source) error {
			for _, w := range s.Warnings {
				notes = append(notes, Note{Kind: Warning, Text: w})
			}
			if err := dc.Check(s); err != nil {
				return err
			}
			// A device without a trace is Add's error, which names the file.
			var r *replay.Result
			if an := New(s, Options{Mode: replay.StatsOnly}); an.HasTrace(fo.Device) {
				var err error
				if r, err = an.Replay(fo.Device); err != nil {
					return err
				}
			}
			addErr = series.Add(&forecast.File{Name: src.Name, Value: p.Value, Snap: s, Replay: r})
			return nil
		})
		if err == nil {
			err = addErr
		}
		if err != nil {
			return nil, notes, forecastError(err)
		}
	}
	res, err := series.Forecast()
	if err != nil {
		return nil, notes, forecastError(err)
	}
	return res, notes, nil
}

// forecastError makes a *forecast.InputError an *UsageError.
func forecastError(err error) error {
	var ie *forecast.InputError
	if errors.As(err, &ie) {
		return &UsageError{Msg: err.Error()}
	}
	return err
}
