package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/leakview"
	"github.com/snapview/snapview/snapshot"
)

// leaksOptions are the flags of `snapview leaks`.
type leaksOptions struct {
	file     string
	top      int
	device   deviceFlag
	at       string
	json     bool
	minBytes string
	focus    string
	ignore   string
	sort     string
	full     bool
	fold     bool
	byAnnot  bool
	by       string
	steps    string
}

func newLeaksCmd() *cobra.Command {
	opts := &leaksOptions{}
	cmd := &cobra.Command{
		Use:     "leaks FILE",
		Short:   "find memory that grows with the run and is never given back, grouped by allocation stack",
		Long:    helpText("leaks"),
		Example: helpText("leaks.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if _, err := opts.analyzeOptions(); err != nil {
				return err
			}
			if opts.at != "auto" {
				if _, err := parseMoment(opts.at); err != nil {
					return err
				}
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runLeaks(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.top, "top", 10, "number of groups shown per device (at least 1)")
	addDeviceFlag(f, &opts.device, "show only this CUDA device ordinal", "every device in the file")
	f.StringVar(&opts.at, "at", "auto", "the moment: auto, end, peak, oom, oom:K, entry:N, time:T or step:K")
	f.BoolVar(&opts.json, "json", false, "write JSON (growth per step, whole stacks) instead of text")
	f.StringVar(&opts.minBytes, "min-bytes", "0", "leave out groups with fewer live bytes (4096, 512KiB, 10MiB, 1GiB; KB, MB, GB are powers of 1000)")
	f.StringVar(&opts.focus, "focus", "", "keep only allocations whose stack has a frame matching this regexp")
	f.StringVar(&opts.ignore, "ignore", "", "drop allocations whose stack has a frame matching this regexp")
	f.StringVar(&opts.sort, "sort", "score", "order of the groups: score, bytes or count")
	f.BoolVar(&opts.full, "full", false, "show every frame of each stack instead of folding torch, stdlib and C++ frames")
	f.BoolVar(&opts.fold, "fold", false, "group by your frames only, merging stacks that differ only inside torch/stdlib/C++")
	f.StringVar(&opts.by, "by", "stack", "what a group is: stack, annotation (as --by-annotation) or region (the torch.compile region of each allocation, compile_context)")
	f.BoolVar(&opts.byAnnot, "by-annotation", false, "group by the annotations torch.cuda.memory._annotate_tensor attached to each allocation (annotate entries) instead of by stack")
	f.StringVar(&opts.steps, "steps", "auto", "how to find steps: auto, annotation, pattern or slices")
	return cmd
}

// analyzeOptions checks the flags and turns them into analyze options
// (At left unset); errors are usage errors.
func (o *leaksOptions) analyzeOptions() (leaks.LeakOptions, error) {
	var lo leaks.LeakOptions
	if o.top < 1 {
		return lo, usageErrorf("--top must be at least 1, got %d", o.top)
	}
	lo.Top = o.top
	b, err := units.ParseBytes(o.minBytes)
	if err != nil {
		return lo, usageErrorf("--min-bytes %q: %v", o.minBytes, err)
	}
	lo.MinBytes = b
	if lo.Sort, err = leaks.ParseLeakSort(o.sort); err != nil {
		return lo, usageErrorf("--sort: %v", err)
	}
	if lo.Steps, err = steps.ParseStepSource(o.steps); err != nil {
		return lo, usageErrorf("--steps: %v", err)
	}
	for _, re := range []struct {
		flag, expr string
		dst        **regexp.Regexp
	}{{"focus", o.focus, &lo.Focus}, {"ignore", o.ignore, &lo.Ignore}} {
		if re.expr == "" {
			continue
		}
		if *re.dst, err = regexp.Compile(re.expr); err != nil {
			return lo, usageErrorf("--%s: %v", re.flag, err)
		}
	}
	lo.Fold = o.fold
	lo.ByAnnotation = o.byAnnot
	switch o.by {
	case "stack":
	case "annotation":
		lo.ByAnnotation = true
	case "region":
		if o.byAnnot {
			return lo, usageErrorf("--by region and --by-annotation group differently: give one")
		}
		lo.ByRegion = true
	default:
		return lo, usageErrorf("--by %q: want stack, annotation or region", o.by)
	}
	return lo, nil
}

func runLeaks(ctx context.Context, opts *leaksOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	lo, err := opts.analyzeOptions()
	if err != nil {
		return err
	}
	var at steps.Moment
	if opts.at != "auto" {
		if at, err = parseMoment(opts.at); err != nil {
			return err
		}
	}
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, _ source) error {
		return findLeaks(ctx, opts, lo, at, s, stdout, stderr)
	})
}

// findLeaks prints the leak report of s.
func findLeaks(ctx context.Context, opts *leaksOptions, lo leaks.LeakOptions, at steps.Moment, s *snapshot.Snapshot, stdout, stderr io.Writer) error {
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", kit.Escape(w))
	}
	if err := opts.device.check(s); err != nil {
		return err
	}
	devices := s.Devices()
	what := "the snapshot"
	if opts.device.set {
		if !slices.Contains(devices, opts.device.n) {
			devices = nil // in device_traces, with an empty trace
		} else {
			devices = []int{opts.device.n}
		}
		what = fmt.Sprintf("device %d", opts.device.n)
	}
	an := analysis.New(s, analysis.Options{})
	if len(devices) == 0 && !opts.json {
		return writeNothing(stdout, an, what)
	}
	devices = opts.device.shown(devices, stderr, "leaks")
	var reps []*leaks.LeakReport
	for _, dev := range devices {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := an.Replay(dev)
		if err != nil {
			return err
		}
		if !r.Check.Equal {
			warnEndState(stderr, "", []int{dev}, "live allocations", r.Check.Differences)
		}
		dlo := lo
		dlo.At = leaks.DefaultLeakMoment(r)
		if opts.at != "auto" && len(r.Allocated) > 0 { // without a trace only the file's state exists
			if dlo.At, err = resolveMoment(s, r, at); err != nil {
				var a *analysis.AbsentError
				if opts.device.set || len(devices) == 1 || !errors.As(err, &a) {
					return err
				}
				// Of several devices, one may have no OOM (or no peak).
				fmt.Fprintf(stderr, "warning: device %d skipped: %s\n", dev, a.Msg)
				continue
			}
		}
		rep, err := an.Leaks(dev, dlo)
		if err != nil {
			return err
		}
		an.Forget(dev) // one device at a time, as a file of many devices needs
		reps = append(reps, rep)
	}
	if len(reps) == 0 && len(devices) > 0 {
		return &usageError{&analysis.AbsentError{Msg: fmt.Sprintf("no device has the moment --at %s", opts.at)}}
	}
	var err error
	if opts.json {
		err = leakview.WriteLeaksJSON(stdout, s, reps, hostJSON(an))
	} else {
		err = leakview.WriteLeaks(stdout, s, reps, leakview.LeakOptions{At: opts.at, Full: opts.full, Steps: lo.Steps})
		if err == nil {
			err = writeHostAfter(stdout, an)
		}
	}
	if err != nil {
		return err
	}
	// After the report, where a reader looks last.
	for _, h := range leakview.LeakHints(reps) {
		fmt.Fprintf(stderr, "hint: %s\n", kit.Escape(h))
	}
	return nil
}
