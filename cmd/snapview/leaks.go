package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/leakview"
	"github.com/snapview/snapview/snapshot"
)

// leaksOptions are the flags of `snapview leaks`.
type leaksOptions struct {
	file   string
	device deviceFlag
	at     string
	json   bool
	full   bool
	leaks.Flags
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
			if _, err := opts.Options(); err != nil {
				return &usageError{err}
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
	f.IntVar(&opts.Top, "top", 10, "number of groups shown per device (at least 1)")
	addDeviceFlag(f, &opts.device, "show only this CUDA device ordinal", "every device in the file")
	f.StringVar(&opts.at, "at", "auto", "the moment: auto, end, peak, oom, oom:K, entry:N, time:T or step:K")
	f.BoolVar(&opts.json, "json", false, "write JSON (growth per step, whole stacks) instead of text")
	f.StringVar(&opts.MinBytes, "min-bytes", "0", "leave out groups with fewer live bytes (4096, 512KiB, 10MiB, 1GiB; KB, MB, GB are powers of 1000)")
	f.StringVar(&opts.Focus, "focus", "", "keep only allocations whose stack has a frame matching this regexp")
	f.StringVar(&opts.Ignore, "ignore", "", "drop allocations whose stack has a frame matching this regexp")
	f.StringVar(&opts.Sort, "sort", "score", "order of the groups: score, bytes or count")
	f.BoolVar(&opts.full, "full", false, "show every frame of each stack instead of folding torch, stdlib and C++ frames")
	f.BoolVar(&opts.Fold, "fold", false, "group by your frames only, merging stacks that differ only inside torch/stdlib/C++")
	f.StringVar(&opts.By, "by", "stack", "what a group is: stack, annotation (as --by-annotation) or region (the torch.compile region of each allocation, compile_context)")
	f.BoolVar(&opts.ByAnnotation, "by-annotation", false, "group by the annotations torch.cuda.memory._annotate_tensor attached to each allocation (annotate entries) instead of by stack")
	f.StringVar(&opts.Steps, "steps", "auto", "how to find steps: auto, annotation, pattern or slices")
	return cmd
}

// runLeaks prints the leak report of the file (analysis.File.LeakReports);
// RunE has checked the flags.
func runLeaks(ctx context.Context, opts *leaksOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	lo, _ := opts.Options()
	req := analysis.LeaksRequest{Picked: opts.device.set, AtText: opts.at, Options: lo}
	if opts.at != "auto" {
		at, _ := parseMoment(opts.at)
		req.At = &at
	}
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, _ source) error {
		printWarnings(stderr, s.Warnings)
		if err := opts.device.check(s); err != nil {
			return err
		}
		devices, what := s.Devices(), "the snapshot"
		if opts.device.set {
			devices = slices.DeleteFunc(devices, func(d int) bool { return d != opts.device.n }) // none: in device_traces, with an empty trace
			what = fmt.Sprintf("device %d", opts.device.n)
		}
		an := analysis.New(s, analysis.Options{Mode: replay.Allocations})
		if len(devices) == 0 && !opts.json {
			return writeNothing(stdout, an, what)
		}
		req.Devices = opts.device.shown(devices, stderr, "leaks")
		reps, notes, err := an.LeakReports(ctx, req)
		kit.WriteNotes(stderr, notes)
		if err != nil {
			return momentUsage(err)
		}
		if err := leakview.WriteLeaksAs(stdout, s, reps, an.Host(), opts.json, leakview.LeakOptions{At: opts.at, Full: opts.full, Steps: lo.Steps}); err != nil {
			return err
		}
		// After the report, where a reader looks last.
		return kit.WriteNotes(stderr, leakview.LeakHints(reps))
	})
}
