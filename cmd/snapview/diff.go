package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/report/compareview"
	"github.com/snapview/snapview/snapshot"
)

// diffOptions are the flags of `snapview diff`.
type diffOptions struct {
	at, baseAt       string
	atSet, baseAtSet bool
	device           deviceFlag
	fold, full       bool
	top, frames      int
	json             bool
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
	so := compare.SideOptions{Full: opts.full}
	var base, new *compare.Side
	var idle []string // notes on a --device the allocator never used, shown with the diff's
	if len(args) == 1 {
		sides, err := measureFile(ctx, stdin, stderr, args[0], &opts.device, []steps.Moment{baseAt, newAt}, []string{"--base-at", "--at"}, so, &idle)
		if err != nil {
			return err
		}
		base, new = sides[0], sides[1]
	} else {
		// One file at a time: the first model is dropped before the
		// second is loaded.
		sides, err := measureFile(ctx, stdin, stderr, args[0], &opts.device, []steps.Moment{baseAt}, []string{"--base-at"}, so, &idle)
		if err != nil {
			return err
		}
		base = sides[0]
		if sides, err = measureFile(ctx, stdin, stderr, args[1], &opts.device, []steps.Moment{newAt}, []string{"--at"}, so, &idle); err != nil {
			return err
		}
		new = sides[0]
	}
	d := compare.Compare(base, new)
	d.Notes = append(idle, d.Notes...)
	ro := compareview.DiffOptions{BaseAt: baseAt.String(), NewAt: newAt.String(), Top: opts.top, Full: opts.full, Frames: opts.frames}
	if opts.json {
		return compareview.WriteDiffJSON(stdout, d, ro)
	}
	return compareview.WriteDiff(stdout, d, ro)
}

// measureFile loads path ("-": standard input), replays the device f names
// (or the first with a trace), and measures it at each moment (whose
// errors name the flag of the same index in flags). When f names
// a device the allocator was never used on in the file, a note saying so
// is appended to idle. Errors name the file.
func measureFile(ctx context.Context, stdin io.Reader, stderr io.Writer, path string, f *deviceFlag, at []steps.Moment, flags []string, so compare.SideOptions, idle *[]string) ([]*compare.Side, error) {
	var sides []*compare.Side
	err := withSnapshotCtx(ctx, stdin, stderr, path, func(s *snapshot.Snapshot, src source) error {
		for _, w := range s.Warnings {
			fmt.Fprintf(stderr, "warning: %s: %s\n", src.name, w)
		}
		dev, note, err := stateDevice(s, f, at[len(at)-1])
		if err != nil {
			return err
		}
		if dev < 0 || !slices.Contains(s.Devices(), dev) {
			return usageErrorf("nothing to compare: the snapshot holds no segments and no trace entries")
		}
		if note != "" {
			fmt.Fprintf(stderr, "note: %s: %s\n", src.name, note)
		}
		if used := s.UsedDevices(); f.set && !slices.Contains(used, dev) {
			n := fmt.Sprintf("%s: the allocator was never used on device %d (a lone snapshot entry, as other ranks' devices have in a distributed process's file): its figures are all 0", src.name, dev)
			if len(used) > 0 {
				n += fmt.Sprintf("; devices used: %s", joinInts(used))
			}
			*idle = append(*idle, n)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		so.Recording = compare.NewFileRecording(s)
		// Without a trace, the state the file holds, whatever the moment:
		// there is no other, and summary reads it so, with no replay.
		an := analysis.New(s, analysis.Options{Mode: replay.Peaks})
		if an.HasTrace(dev) {
			r, err := an.Replay(dev)
			if err != nil {
				return err
			}
			if !r.Check.Equal {
				warnEndState(stderr, src.name, []int{dev}, "figures", nil)
			}
		}
		for k, m := range at {
			sd, err := an.Side(dev, m, so)
			if err != nil {
				return renameFlag(momentError(s, dev, m, err), flags[k])
			}
			sd.File = src.name
			sides = append(sides, sd)
		}
		return nil
	})
	return sides, err
}
