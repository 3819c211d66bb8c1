package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/report/compareview"
	"github.com/snapview/snapview/report/kit"
)

// ranksOptions are the flags of `snapview ranks`.
type ranksOptions struct {
	device deviceFlag
	full   bool
	top    int
	frames int
	json   bool
	align  alignFlag
}

func newRanksCmd() *cobra.Command {
	opts := &ranksOptions{}
	cmd := &cobra.Command{
		Use:     "ranks FILE... | ranks DIR",
		Short:   "compare the ranks of a distributed run side by side: which rank uses more memory, and why",
		Long:    helpText("ranks"),
		Example: helpText("ranks.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("ranks takes the files of the ranks (or a directory of them)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.top < 0 {
				return usageErrorf("--top must be 0 (all) or more, got %d", opts.top)
			}
			if opts.frames < 0 {
				return usageErrorf("--frames must be 0 (all) or more, got %d", opts.frames)
			}
			if err := opts.align.parse(); err != nil {
				return err
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runRanks(cmd.Context(), opts, args, out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	addDeviceFlag(f, &opts.device, "compare only this CUDA device ordinal of each file", "every device of every file")
	f.BoolVar(&opts.full, "full", false, "match stacks by their whole stacks instead of their user frames")
	f.IntVar(&opts.top, "top", 10, "number of varying stacks and of diffed stacks listed (0: all)")
	f.IntVar(&opts.frames, "frames", 6, "most lines printed per stack (0: all)")
	f.BoolVar(&opts.json, "json", false, "write JSON instead of text")
	addAlignFlag(f, &opts.align, "the ranks' peaks")
	return cmd
}

func runRanks(ctx context.Context, opts *ranksOptions, args []string, stdout, stderr io.Writer) error {
	steps, notes, err := analysis.Ranks(ctx, openFile(nil, io.Discard), args, analysis.RanksOptions{
		Device: opts.device.choice(), Full: opts.full, Top: opts.top, Align: opts.align.mode,
	})
	kit.WriteNotes(stderr, notes)
	if err != nil {
		return momentUsage(err)
	}
	ro := compareview.RanksOptions{Top: opts.top, Frames: opts.frames, Full: opts.full}
	if opts.json {
		return compareview.WriteRankStepsJSON(stdout, steps, ro)
	}
	return compareview.WriteRankSteps(stdout, steps, ro)
}
