package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/forecast"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/verdictview"
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

// parseForecastArg parses one FILE=VALUE argument.
func parseForecastArg(a string) (analysis.ForecastInput, error) {
	i := strings.LastIndexByte(a, '=')
	if i <= 0 {
		return analysis.ForecastInput{}, usageErrorf("%q: want FILE=VALUE (the snapshot and the batch size or sequence length it was recorded at)", a)
	}
	v, err := strconv.ParseInt(a[i+1:], 10, 64)
	if err != nil || v <= 0 {
		return analysis.ForecastInput{}, usageErrorf("%q: the value %q is not a positive integer", a, a[i+1:])
	}
	return analysis.ForecastInput{Path: a[:i], Value: v}, nil
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
	limit, _, err := parseCapFlags(opts.limit, "")
	if err != nil {
		return err
	}
	fo.Limit = limit
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
	var in []analysis.ForecastInput
	stdins := 0
	for _, a := range args {
		p, err := parseForecastArg(a)
		if err != nil {
			return err
		}
		if p.Path == stdinPath {
			stdins++
		}
		in = append(in, p)
	}
	if stdins > 1 {
		return usageErrorf("standard input (-) holds one snapshot: give it once")
	}
	res, notes, err := analysis.Forecast(ctx, openFile(stdin, errOut), in, fo, opts.device.choice())
	kit.WriteNotes(errOut, notes)
	if err != nil {
		return err
	}
	if opts.json {
		return verdictview.WriteForecastJSON(out, res)
	}
	return verdictview.WriteForecast(out, res)
}
