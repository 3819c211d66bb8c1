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
		Use:   "diff BASE NEW | diff FILE --base-at MOMENT --at MOMENT",
		Short: "compare two snapshots, or two moments of one: what grew, what the change cost",
		Long: `diff compares two snapshots (the run before and after a change, default
versus expandable_segments, rank 0 versus rank 7), or two moments of one
snapshot (step 3 versus the last step): BASE is what you compare against,
NEW what you look at, as with pprof's -base. Each side is a device of a
file at a moment; the allocator is replayed to it.

It shows:
  - the allocator_settings that differ;
  - memory_stats() figures side by side with their deltas: allocated,
    reserved, active, requested, reserved minus allocated (memory cached
    but not allocated), allocations, segments, the peaks up to the moment,
    OOMs and cudaMalloc retries, each with its trust mark ('+': at least
    this much, as the trace misses the start of the run or, for retries,
    as a retry that succeeds leaves no entry; '?': unknown);
  - how the recordings differ (trace coverage, the stacks and context
    options of _record_memory_history, the PyTorch version hint);
  - notes where the data shows a cause ("same allocations, reserved
    -640.0 MiB: the setting (expandable_segments)");
  - the live allocations (allocated, not yet freed) of each stack on each
    side, matched by the stack's user frames (the key leaks --fold uses:
    frames inside torch/, the standard library and C++ dropped; a stack
    without user frames keeps its whole stack), never by address; --full
    matches whole stacks. Each stack has its bytes and allocations on both
    sides, the delta and a status (new, gone, grown, shrunk, same), sorted
    by |delta|; the total row adds up to each side's allocated bytes.

--at and --base-at choose the moments of NEW and BASE (default: each
side's peak). With one FILE both are required, and both sides are that
file:
` + momentHelp + `

--device chooses the device of both files (default: the first with a
trace, leaving out the devices the allocator was never used on, which a
distributed process's file lists with a lone snapshot entry). Where
--device names such a device of one file (rank 0's file holds device 1
only as a lone entry), the notes say so: that side's figures are all 0.

--json writes one object:
  {"base": {"file", "device", "at", "entry"},   at: the moment as given,
   "new":  {"file", "device", "at", "entry"},   entry: its trace entry
   "settings": [{"key", "base", "new"}],        ("" where a side lacks it)
   "figures":  [{"name", "base", "new", "delta", "exactness"}],
   "stacks":   [{"key", "frames": [{"filename", "line", "name"}],
                 "base_bytes", "new_bytes", "delta_bytes",
                 "base_requested_bytes", "new_requested_bytes",
                 "base_count", "new_count", "status"}],
   "recording": [{"what", "base", "new"}],
   "notes": ["..."]}
name is the memory_stats() key ("reserved_bytes.all.current"; reserved
minus allocated is "reserved_minus_allocated_bytes.all.current");
exactness is "exact", "lower_bound" or "unknown" for the pair (exact only
when both sides are); key is the frames of the stack key, one
"filename:line name" per line, "" for allocations without a stack. Every
stack is listed, whatever --top says. Sizes are bytes.

A file that cannot be read or is not a snapshot is an error naming it
(exit code 1); a moment or device a file does not have is a usage error
naming it (exit code 2).`,
		Example: `  snapview diff before.pickle after.pickle
  snapview diff --at end --base-at end default.pickle expandable.pickle
  snapview diff train.pickle --base-at step:3 --at step:last
  snapview diff --json rank0.pickle rank7.pickle > diff.json`,
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
