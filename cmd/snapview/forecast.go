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
		Use:   "forecast FILE=VALUE FILE=VALUE [FILE=VALUE...]",
		Short: "forecast peak memory at another batch size or sequence length, and the largest that fits, from snapshots at other sizes",
		Long: `Forecast predicts the peak allocated and reserved memory of a training run at
another batch size or sequence length (VALUE), from snapshots of the same code
recorded at two or more other values, and with --max the largest value that
fits under a cap. Each FILE=VALUE is a snapshot recorded from the first
allocation (torch.cuda.memory._record_memory_history() before the model is
moved to the GPU) and the value of the parameter in that run.

How. The same code at another size makes the same requests in the same order,
with other sizes. The files' request sequences are aligned: requests match by
stack and stream, in order (a longest common subsequence), where their sizes
scale together (equal, or in the ratio of the values or of their squares);
between two matches, requests of the same stack match whatever their sizes.
Each request gets a size as a function of the value, fitted over the files
that make it: the simplest that gives every file's size to the byte (or
within the allocator's rounding) among constant, linear (a*v), quadratic
(a*v^2: attention scores in the sequence length), affine (a*v + c) and, from
four files, a*v^2 + b*v + c. A form is only taken with more files than it
has parameters: from two files a size none of the first three gives is
affine; from three or more it is irregular: piecewise linear between the
files, beyond them the line through the two nearest (a workspace that stops
growing). A reduction's staging buffer (ATen's Reduce.cuh allocates one,
then its int semaphores, and frees both at once) grows with the size up to a
cap the device's grid sets, and is not made for a short reduction: it is
fitted linear up to a cap (min(a*v, c)) when the files show the cap binding,
and below every file it is at most its nearest file's size in proportion to
the value. At a target value the file nearest it is resized: its requests,
frees, streams and order, each request at its fitted size, those no other
file makes (a cuDNN workspace that comes and goes with the size) at that
file's size. The sequence is then run through snapview whatif's simulation
of the caching allocator (DeviceCachingAllocator, torch 2.11) under the
nearest file's settings or --conf, and under --limit.

Honesty. Every figure is an estimate: it holds if the code at the target makes
the requests the files do. The text gives the share of requests and bytes
matched, the stacks that did not match, how sizes scale by stack, and marks a
target outside the files' values (extrapolated) or more than their span beyond
them (far). Beyond the files, where the reduction buffers could sit at the
other end of their rule (below the files: at the files' size, capped all the
way down; above them: held at the nearest file's size), the target is
simulated that way too and its peaks are given as a band: the figures lie
between the two ends, and an OOM verdict that holds at one end only says so.
With three files or more, each file is also forecast from the others
(leave-one-out) and the errors printed.

--to VALUE[,VALUE...] forecasts those values. --max searches the largest value
that fits under --limit (required): it starts from the files' peak reserved
extrapolated to the cap and brackets, then bisects, at most 10 simulations;
it gives the value, its peaks, and the next value's failing request.
--limit BYTES is the cap (set_per_process_memory_fraction(f) x the device's
memory): plain bytes or 10883MiB, 10.6GiB, 11GB. --conf is a whole
PYTORCH_CUDA_ALLOC_CONF value to simulate instead of the files' own. --param
names the parameter in the output (batch, seq).

Exit status 2 (usage): one file only, a value given twice, a file with no
trace from the start of the run or that ran out of memory, or files whose
requests do not align (less than half of a file's requests match another's:
files from different code); the message names the files and the first
request that did not align.

--json prints {"param", "device", "conf" (simulated), "limit_bytes" (null:
none), "estimate" (true), "files" ([{"file", "value", "requests", "bytes",
"matched_requests", "matched_bytes", "peak_allocated_bytes",
"peak_reserved_bytes", "conf"}]), "matched" ({"requests", "bytes"}: shares 0-1
of all files' requests and bytes matched in every other file), "unmatched"
([{"file", "stack", "requests", "bytes"}], most bytes first), "scaling"
({"at_value" (the file described), "forms" ({FORM: {"requests", "bytes"}}),
"stacks" ([{"form", "stack", "requests", "bytes"}]), "rounded_requests",
"partly_matched_requests", "partly_matched_bytes"}), "targets" ([{"value",
"peak_allocated_bytes", "peak_reserved_bytes", "oom", "oom_entry" (the first
failing request's entry in from_file's trace, or null), "oom_request_bytes",
"oom_stack" (null without an OOM), "from_file", "extrapolated",
"far_beyond_files", "below_files", "band" (null, or {"requests" (the
reduction buffers sized otherwise), "peak_allocated_bytes",
"peak_reserved_bytes", "oom", "oom_entry"}: the other end)}]), "max"
({"found", "value", "peak_reserved_bytes", "peak_allocated_bytes", "next" (a
target object for value+1), "simulations" (the search's and the bands'),
"search_start", "search_refined_start", "band" (the value's, as a
target's)} or null),
"leave_one_out" ([{"file", "value", "peak_allocated_bytes",
"peak_reserved_bytes", "file_peak_allocated_bytes",
"file_peak_reserved_bytes", "allocated_error_percent",
"reserved_error_percent"}]), "simulations", "notes"}. FORM is constant,
linear, quadratic, affine, quadratic+linear, "linear up to a cap" or
irregular.`,
		Example: `  # Peak memory at batch 24 from runs at batch 1 and 2
  snapview forecast --param batch --to 24 b1.pickle=1 b2.pickle=2

  # The largest batch under a 10883 MiB cap, with expandable segments
  snapview forecast --param batch --max --limit 10883MiB \
      --conf expandable_segments:True b1.pickle=1 b2.pickle=2 b4.pickle=4`,
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
