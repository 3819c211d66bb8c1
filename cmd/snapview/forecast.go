package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/forecast"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// forecastOptions are the flags of `snapview forecast`.
type forecastOptions struct {
	to     []string
	max    bool
	limit  string
	param  string
	conf   string
	device deviceFlag
	json   bool
}

func newForecastCmd() *cobra.Command {
	opts := &forecastOptions{}
	cmd := &cobra.Command{
		Use:     "forecast FILE=VALUE FILE=VALUE [FILE=VALUE...]",
		Short:   "forecast peak memory at another batch size or sequence length, and the largest that fits, from snapshots at other sizes",
		Long:    helpText("forecast"),
		Example: helpText("forecast.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErrorf("forecast needs two snapshots or more, each FILE=VALUE (got %d): a single run cannot say how memory scales", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runForecast(cmd.Context(), opts, args, cmd.Flags().Changed("conf"), cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	cmd.Flags().StringSliceVar(&opts.to, "to", nil, "forecast at `VALUE[,VALUE...]`")
	cmd.Flags().BoolVar(&opts.max, "max", false, "search the largest value that fits under --limit")
	cmd.Flags().StringVar(&opts.limit, "limit", "", "the cap: `BYTES`, or with a unit, 10883MiB, 10.6GiB (default: none)")
	cmd.Flags().StringVar(&opts.param, "param", "value", "the parameter's `NAME` in the output (batch, seq)")
	cmd.Flags().StringVar(&opts.conf, "conf", "", "simulate `CONF`, a whole PYTORCH_CUDA_ALLOC_CONF value (default: the files' own)")
	addDeviceFlag(cmd.Flags(), &opts.device, "read this CUDA device ordinal's trace", "0")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON instead of tables")
	return cmd
}

// forecastArg is one FILE=VALUE argument.
type forecastArg struct {
	path  string
	value int64
}

func parseForecastArg(a string) (forecastArg, error) {
	i := strings.LastIndexByte(a, '=')
	if i <= 0 {
		return forecastArg{}, usageErrorf("%q: want FILE=VALUE (the snapshot and the batch size or sequence length it was recorded at)", a)
	}
	v, err := strconv.ParseInt(a[i+1:], 10, 64)
	if err != nil || v <= 0 {
		return forecastArg{}, usageErrorf("%q: the value %q is not a positive integer", a, a[i+1:])
	}
	return forecastArg{path: a[:i], value: v}, nil
}

func runForecast(ctx context.Context, opts *forecastOptions, args []string, confGiven bool, stdin io.Reader, out, errOut io.Writer) error {
	fo := forecast.Options{Param: opts.param, Max: opts.max}
	if opts.device.set {
		fo.Device = opts.device.n
	}
	if confGiven {
		cfg, err := allocator.Parse(opts.conf)
		if err != nil {
			return &usageError{fmt.Errorf("--conf: %w", err)}
		}
		fo.Conf, fo.ConfText = &cfg, opts.conf
	}
	if opts.limit != "" {
		l, err := units.ParseBytes(opts.limit)
		if err != nil {
			return usageErrorf("--limit %q: %v", opts.limit, err)
		}
		if l <= 0 {
			return usageErrorf("--limit %q: want a positive byte count", opts.limit)
		}
		fo.Limit = l
	}
	for _, t := range opts.to {
		v, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64)
		if err != nil || v <= 0 {
			return usageErrorf("--to %q: want positive integers (a batch size, a sequence length)", t)
		}
		fo.Targets = append(fo.Targets, v)
	}
	if len(fo.Targets) == 0 && !opts.max {
		return usageErrorf("give --to VALUE[,VALUE...] or --max --limit BYTES")
	}
	if opts.max && fo.Limit == 0 {
		return usageErrorf("--max needs --limit BYTES: the cap to fit under")
	}
	var parsed []forecastArg
	stdins := 0
	for _, a := range args {
		p, err := parseForecastArg(a)
		if err != nil {
			return err
		}
		if p.path == stdinPath {
			stdins++
		}
		parsed = append(parsed, p)
	}
	if stdins > 1 {
		return usageErrorf("standard input (-) holds one snapshot: give it once")
	}
	// Each snapshot is read into the series, then dropped: one is held at
	// a time.
	// Add's errors name the files themselves: they are kept out of
	// withSnapshotCtx, which would name the file again.
	series := forecast.NewSeries(fo)
	for _, p := range parsed {
		var addErr error
		err := withSnapshotCtx(ctx, stdin, errOut, p.path, func(s *snapshot.Snapshot, src source) error {
			printWarnings(errOut, s.Warnings)
			if err := opts.device.check(s); err != nil {
				return err
			}
			// A device without a trace is Add's error, which names the file.
			var r *replay.Result
			if an := analysis.New(s, analysis.Options{Mode: replay.StatsOnly}); an.HasTrace(fo.Device) {
				var err error
				if r, err = an.Replay(fo.Device); err != nil {
					return err
				}
			}
			addErr = series.Add(&forecast.File{Name: src.name, Value: p.value, Snap: s, Replay: r})
			return nil
		})
		if err == nil {
			err = addErr
		}
		if err != nil {
			var ie *forecast.InputError
			if errors.As(err, &ie) {
				return &usageError{err}
			}
			return err
		}
	}
	res, err := series.Forecast()
	if err != nil {
		var ie *forecast.InputError
		if errors.As(err, &ie) {
			return &usageError{err}
		}
		return err
	}
	if opts.json {
		return verdictview.WriteForecastJSON(out, res)
	}
	return verdictview.WriteForecast(out, res)
}
