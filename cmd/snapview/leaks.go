package main

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/hostview"
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
	req := analysis.LeaksRequest{Picked: opts.device.set, AtText: opts.at, Options: lo}
	if opts.at != "auto" {
		at, err := parseMoment(opts.at)
		if err != nil {
			return err
		}
		req.At = &at
	}
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, _ source) error {
		return findLeaks(ctx, opts, req, s, stdout, stderr)
	})
}

// findLeaks prints the leak report of s (analysis.File.LeakReports).
func findLeaks(ctx context.Context, opts *leaksOptions, req analysis.LeaksRequest, s *snapshot.Snapshot, stdout, stderr io.Writer) error {
	printWarnings(stderr, s.Warnings)
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
	req.Devices = opts.device.shown(devices, stderr, "leaks")
	reps, notes, err := an.LeakReports(ctx, req)
	kit.WriteNotes(stderr, notes)
	if err != nil {
		return momentUsage(err)
	}
	if opts.json {
		err = leakview.WriteLeaksJSON(stdout, s, reps, hostview.NewJSON(an.Host()))
	} else {
		err = leakview.WriteLeaks(stdout, s, reps, leakview.LeakOptions{At: opts.at, Full: opts.full, Steps: req.Options.Steps})
		if err == nil {
			err = hostview.WriteAfter(stdout, s, an.Host())
		}
	}
	if err != nil {
		return err
	}
	// After the report, where a reader looks last.
	return kit.WriteNotes(stderr, leakview.LeakHints(reps))
}
