package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/explain"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// explainOptions are the flags of `snapview explain`.
type explainOptions struct {
	file   string
	device deviceFlag
	json   bool
	limit  string
	oomMsg string
}

func newExplainCmd() *cobra.Command {
	opts := &explainOptions{}
	cmd := &cobra.Command{
		Use:   "explain FILE",
		Short: "say what went wrong, why, and what to change: OOM causes, blocking allocations, leaks, the recording",
		Long: `explain answers first: a short ranked list of findings per device, each a
one-line verdict, the figures that prove it (marked as every view marks
them: "at least" for a lower bound, "?" for unknown), the allocation stacks
involved, and what to do. Every figure is one that summary, state, whatif
or leaks --json gives for the same file.

Findings, most severe first:
  oom-fragmentation  an OOM whose pool had enough cached free bytes for the
                     request, in blocks too small (the cache is fragmented,
                     not the device)
  oom-cap            an OOM while the device had more free memory than the
                     request: the process's own cap
                     (set_per_process_memory_fraction) was the limit
  oom-device         an OOM while the device had less free memory than the
                     request
  blockers           the live allocations that kept the request from a
                     free block: the fewest whose absence would have left a
                     block large enough ("contiguity"), or the live blocks
                     pinning partly free segments the allocator could not
                     give back before its retry ("release"); with the bytes
                     they strand and how long they had been held
  avoidable-malloc   segment_allocs made while the pool's cached free bytes
                     covered the request, with the blockers of the largest
  reserved-gap       reserved far above allocated at the allocated peak:
                     where the cached bytes sit and why (split remainders,
                     pending frees on other streams, private pools)
  pool               a private pool (CUDA graph, MemPool): reserved
                     high-water, active at the peak and at the end,
                     "abandoned" when it holds segments and no active block
  leak / no-leak     the leak ranking's top verdict, or "no leak" when
                     steps were found and nothing grows over them
  growth-unjudged    no training steps were found: growth cannot be judged
  recording          the trust verdict and the recording options the file
                     lacks (max_entries, an earlier start)

With an OOM, or a reserved gap, the settings of snapview whatif are
simulated (the cap inferred from the OOM unless --limit or --oom-message
gives it) and its verdict, over the caps the file allows, is the action.
Where fragmentation is the cause (an oom-fragmentation, a reserved gap of
split remainders, release blockers), max_split_size_mb:20 is simulated too
and taken when whatif's rule prefers it (release blockers always take it).
--oom-message also gives the device's capacity, the memory the process
had in use beyond PyTorch's reserved bytes, and other processes'.

--json prints {"devices":[{"device","findings":[{"kind","severity"
("error", "warning" or "info"),"verdict","figures":{NAME: bytes, entries,
counts or microseconds; null when unknown},"exactness":{NAME: "exact",
"lower_bound" or "unknown"},"stacks":[[{"filename","line","name"}]],
"action","entry" (the trace entry, -1 none),"pool","pool_id","stream"
(null when none),"setting" ({"conf","peak_reserved_bytes","fits"} or
null),"mode" ("contiguity" or "release" for blockers),"blockers":[{"stack"
(index into stacks),"where","count","bytes","stranded_bytes","segments",
"min_size","max_size","first_alloc_entry","held_entries","held_us"}]}]}]}.
Kinds and keys are stable; new keys may be added.`,
		Example: `  snapview explain oom_snapshot.pickle
  snapview explain --device 1 --json snapshot.pickle`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runExplain(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	addDeviceFlag(cmd.Flags(), &opts.device, "explain only this CUDA device ordinal", "every device with segments or trace entries")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON instead of text")
	cmd.Flags().StringVar(&opts.oomMsg, "oom-message", "", "torch's OutOfMemoryError message for the run, `TEXT` or @FILE, as whatif reads it: fixes the cap and gives the device's capacity and the memory beyond PyTorch")
	cmd.Flags().StringVar(&opts.limit, "limit", "", "the cap the process ran under, for the what-if: `BYTES`, or with a unit, 4.5GiB (default: inferred from an OOM)")
	return cmd
}

func runExplain(ctx context.Context, opts *explainOptions, stdin io.Reader, out, errOut io.Writer) error {
	limit, msg, err := parseCapFlags(opts.limit, opts.oomMsg)
	if err != nil {
		return err
	}
	return withSnapshotCtx(ctx, stdin, errOut, opts.file, func(s *snapshot.Snapshot, _ source) error {
		printWarnings(errOut, s.Warnings)
		devices, err := opts.device.pick(s)
		if err != nil {
			return err
		}
		have := map[int]bool{}
		for _, d := range s.Devices() {
			have[d] = true
		}
		var use []int
		for _, d := range devices {
			if have[d] {
				use = append(use, d)
			}
		}
		use = opts.device.shown(use, errOut, "explain")
		if err := ctx.Err(); err != nil {
			return err
		}
		an := analysis.New(s, analysis.Options{States: analysis.ExplainStates})
		devs, err := an.Explain(use, explain.Options{Whatif: whatif.Options{Limit: limit, OOMMessage: msg}})
		if err != nil {
			return err
		}
		v := verdictview.NewExplainView(s, devs)
		if opts.json {
			return verdictview.WriteExplainJSON(out, v)
		}
		if len(devs) == 0 {
			return writeNothing(out, s, "the snapshot")
		}
		return verdictview.WriteExplain(out, v)
	})
}
