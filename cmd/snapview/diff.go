package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/report/compareview"
	"github.com/snapview/snapview/report/kit"
)

// diffOptions are the flags of `snapview diff`.
type diffOptions struct {
	at, baseAt       string
	atSet, baseAtSet bool
	device           deviceFlag
	fold, full       bool
	top, frames      int
	json             bool
	align            alignFlag
}

func newDiffCmd() *cobra.Command {
	opts := &diffOptions{}
	cmd := &cobra.Command{
		Use:     "diff BASE NEW | diff FILE --base-at MOMENT --at MOMENT",
		Short:   "compare two snapshots, or two moments of one: what grew, what the change cost",
		Long:    helpText("diff"),
		Example: helpText("diff.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErrorf("diff takes BASE NEW, or FILE with --base-at and --at; got %d arguments", len(args))
			}
			if len(args) == 2 && args[0] == stdinPath && args[1] == stdinPath {
				return usageErrorf("standard input (-) holds one snapshot: give at most one of BASE and NEW as -")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.atSet = cmd.Flags().Changed("at")
			opts.baseAtSet = cmd.Flags().Changed("base-at")
			if len(args) == 1 && (!opts.atSet || !opts.baseAtSet) {
				return usageErrorf("diff of one file compares two moments of it: give both --base-at and --at (diff %s --base-at step:3 --at end)", args[0])
			}
			if opts.top < 0 {
				return usageErrorf("--top must be 0 (all) or more, got %d", opts.top)
			}
			if opts.frames < 0 {
				return usageErrorf("--frames must be 0 (all) or more, got %d", opts.frames)
			}
			if opts.fold && opts.full {
				return usageErrorf("--fold and --full ask for different stack keys: give one")
			}
			if err := opts.align.parse(); err != nil {
				return err
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runDiff(cmd.Context(), opts, args, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.at, "at", "peak", "the moment of NEW: peak, oom, oom:K, end, entry:N, time:T or step:K")
	f.StringVar(&opts.baseAt, "base-at", "peak", "the moment of BASE: peak, oom, oom:K, end, entry:N, time:T or step:K")
	addDeviceFlag(f, &opts.device, "compare this CUDA device ordinal of both files", "the first device used, with a trace")
	f.BoolVar(&opts.fold, "fold", false, "match stacks by their user frames (the default; as leaks --fold)")
	f.BoolVar(&opts.full, "full", false, "match stacks by their whole stacks instead of their user frames")
	f.IntVar(&opts.top, "top", 20, "number of stacks listed, largest change first (0: all)")
	f.IntVar(&opts.frames, "frames", 8, "most lines printed per stack (0: all)")
	f.BoolVar(&opts.json, "json", false, "write JSON (every stack) instead of text")
	addAlignFlag(f, &opts.align, "the two sides' times")
	return cmd
}

func runDiff(ctx context.Context, opts *diffOptions, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	newAt, err := parseMoment(opts.at)
	if err != nil {
		return err
	}
	baseAt, err := parseMomentFlag("--base-at", opts.baseAt)
	if err != nil {
		return err
	}
	d, notes, err := analysis.Diff(ctx, openFile(stdin, stderr), args, analysis.DiffOptions{
		BaseAt: baseAt, At: newAt, Device: opts.device.choice(), Full: opts.full, Align: opts.align.mode,
	})
	kit.WriteNotes(stderr, notes)
	if err != nil {
		return momentUsage(err)
	}
	ro := compareview.DiffOptions{BaseAt: baseAt.String(), NewAt: newAt.String(), Top: opts.top, Full: opts.full, Frames: opts.frames}
	if opts.json {
		return compareview.WriteDiffJSON(stdout, d, ro)
	}
	return compareview.WriteDiff(stdout, d, ro)
}
