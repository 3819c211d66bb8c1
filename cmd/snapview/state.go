package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// stateOptions are the flags of `snapview state`.
type stateOptions struct {
	file   string
	at     string
	atSet  bool // --at was given: peak is not the default
	device deviceFlag
	json   bool
	top    int
	frames int
}

func newStateCmd() *cobra.Command {
	opts := &stateOptions{}
	cmd := &cobra.Command{
		Use:     "state FILE",
		Short:   "show the allocator state at the peak, at an OOM, at the end, or at any trace entry",
		Long:    helpText("state"),
		Example: helpText("state.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			opts.atSet = cmd.Flags().Changed("at")
			if _, err := parseMoment(opts.at); err != nil {
				return err
			}
			if opts.top < 1 {
				return usageErrorf("--top must be at least 1, got %d", opts.top)
			}
			if opts.frames < 0 {
				return usageErrorf("--frames must be 0 (all) or more, got %d", opts.frames)
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runState(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.at, "at", "peak", "the moment: peak, oom, oom:K, end, entry:N, time:T or step:K")
	addDeviceFlag(f, &opts.device, "show this CUDA device ordinal", "for --at oom the first device with one, else the first with a trace")
	f.BoolVar(&opts.json, "json", false, "write JSON (every block, every stack) instead of text")
	f.IntVar(&opts.top, "top", 10, "number of largest allocations and of stacks listed (at least 1)")
	f.IntVar(&opts.frames, "frames", 12, "most frame lines printed per stack, after folding torch, standard-library and C++ frames (0: all)")
	return cmd
}

// stateDevice returns the device state shows (-1 when the snapshot has
// none) and, when it chose one of several, a note saying which and why:
// the one --device names, else analysis.ShownDeviceNote's.
func stateDevice(s *snapshot.Snapshot, f *deviceFlag, at steps.Moment) (dev int, note string, err error) {
	if f.set {
		return f.n, "", f.check(s)
	}
	dev, note = analysis.ShownDeviceNote(s, at)
	return dev, note, nil
}

// writeNothing is report.WriteNothing: the line a view of device memory
// prints when what (the snapshot, device N) holds nothing.
func writeNothing(w io.Writer, f *analysis.File, what string) error {
	return report.WriteNothing(w, f, what)
}

// hasHost says whether s holds pinned host memory (hostview.Has).
func hasHost(s *snapshot.Snapshot) bool { return hostview.Has(s) }

// runState prints the state of the file at the moment --at
// (report.StateOf); RunE has checked the flags.
func runState(ctx context.Context, opts *stateOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	at, _ := parseMoment(opts.at)
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, _ source) error {
		printWarnings(stderr, s.Warnings)
		if err := ctx.Err(); err != nil {
			return err
		}
		dev, note, err := stateDevice(s, &opts.device, at)
		if err != nil {
			return err
		}
		an := analysis.New(s, analysis.Options{})
		if dev < 0 || !slices.Contains(s.Devices(), dev) {
			return report.WriteNoState(stdout, an, dev, opts.json)
		}
		if note != "" {
			fmt.Fprintf(stderr, "note: %s\n", kit.Escape(note))
		}
		v, notes, err := report.StateOf(ctx, an, report.StateRequest{Device: dev, At: at, Label: opts.at, AtSet: opts.atSet,
			Options: report.StateOptions{Top: opts.top, Frames: opts.frames}})
		kit.WriteNotes(stderr, notes)
		switch {
		case err != nil:
			return momentUsage(err)
		case opts.json:
			return report.WriteStateJSON(stdout, v)
		}
		if err := report.WriteState(stdout, v); err != nil {
			return err
		}
		return hostview.WriteAfter(stdout, s, an.Host())
	})
}
