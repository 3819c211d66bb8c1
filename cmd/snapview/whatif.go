package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/progress"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// whatifOptions are the flags of `snapview whatif`.
type whatifOptions struct {
	file   string
	confs  []string
	limit  string
	oomMsg string
	device deviceFlag
	json   bool
}

// newWhatifCmd builds the whatif command. It is longer than 120 lines on
// purpose: its help text (the candidate settings, the verdicts and the
// JSON keys, printed by --help as written here) is long, not its logic,
// which is runWhatif's.
func newWhatifCmd() *cobra.Command {
	opts := &whatifOptions{}
	cmd := &cobra.Command{
		Use:   "whatif FILE",
		Short: "simulate the caching allocator under other PYTORCH_CUDA_ALLOC_CONF settings and a memory cap",
		Long: `Whatif replays the requests the trace recorded (each allocation's size and
stream, the order of the frees, the empty_cache() calls) through a simulation
of PyTorch's CUDA caching allocator (DeviceCachingAllocator, torch 2.11) under
other PYTORCH_CUDA_ALLOC_CONF settings and a memory cap, and predicts for each
the peak reserved and allocated memory, the cudaMalloc calls and retries, and
whether a request would have failed with an OutOfMemoryError. It answers
"which setting would have avoided this OOM?" and "why does reserved run so far
above allocated?" from the one file, without running the program again.

Self-check. Before any prediction, the file's own settings (and cap) are
simulated and compared with the file: every segment_alloc (segment_map) in
order, with its size and address, every allocation's segment and offset,
the peaks and the OOMs. The result is printed; when the simulation diverges,
the entry and the reason are given and the predictions are approximate.

Without --conf, these candidates are tried: torch's defaults ("") and the
file's settings with each of its settings removed, then these, each changing
one setting of the file's own (one the file already has is not tried):

  expandable_segments:True
      torch: "If set to True, this setting instructs the allocator to
      create CUDA allocations that can later be expanded to better handle
      cases where a job changes allocation sizes frequently, such as having a
      changing batch size." Segments grow by mapping pages (2 MiB for the
      small pool, 20 MiB for the large one) instead of one cudaMalloc per
      new segment.
  max_split_size_mb:64, 128, 256, 512
      torch: "prevents the native allocator from splitting blocks larger
      than this size (in MB). This can reduce fragmentation and may allow
      some borderline workloads to complete without running out of memory."
      Blocks this large are reused only for requests at most
      max_non_split_rounding_mb (20 MB) smaller, and are freed first when
      cudaMalloc fails.
  roundup_power2_divisions:4, 8, [256:1,512:2,1024:4,>:8]
      torch: "helps with rounding the requested allocation size to nearest
      power-2 division and making better use of the blocks." With 4, a
      request of 1200 MB is rounded to 1280 MB (the divisions of [1024,
      2048) MB being 1024, 1280, 1536, 1792). In the list form each
      boundary B (MB) sets the divisions of the sizes from B to 2B, the
      first also those below it and '>' those after the last: as torch's
      code reads it, [256:1,512:2,1024:4,>:8] is 1 below 512 MB, 2 for
      [512 MB, 1 GB), 4 for [1, 2) GB and 8 from 2 GB (torch's
      documentation describes the intervals one power of two lower).
  garbage_collection_threshold:0.6, 0.8 (only under a cap)
      torch: "helps actively reclaiming unused GPU memory to avoid
      triggering expensive sync-and-reclaim-all operation
      (release_cached_blocks)": once reserved memory passes this fraction of
      the cap, unsplit cached blocks are freed, oldest first, before a new
      cudaMalloc. It only acts under torch.cuda.set_per_process_memory_fraction.

--conf takes a whole PYTORCH_CUDA_ALLOC_CONF value as you would export it,
parsed as torch parses it (keys max_split_size_mb, max_non_split_rounding_mb,
roundup_power2_divisions, garbage_collection_threshold, expandable_segments,
and the ones that do not change the simulation: backend:native,
release_lock_on_cudamalloc, pinned_*, graph_capture_record_stream_reuse);
settings it does not name take torch's defaults, and --conf "" is all
defaults. Repeat it to compare several; then only those are simulated.

--oom-message TEXT (or @FILE) is torch's OutOfMemoryError message for the
run. Its "N allowed" (set_per_process_memory_fraction) fixes the cap to the
message's two decimals, intersected with what the trace allows; without
it, the reserved bytes at the oom entry plus "of which F is free". The
device's capacity ("total capacity of"), this process's use and other
processes' ("Process P has N memory in use") are printed with the cap.

--limit BYTES is the cap the process ran under:
set_per_process_memory_fraction(f) x the device's memory (f x
torch.cuda.get_device_properties(0).total_memory), or the device's memory.
Plain bytes or with a unit: 4656MiB, 4.5GiB, 5GB. Without it or
--oom-message, a trace with an OOM bounds the cap (at least the highest
reserved seen, less than the reserved bytes at the failed request plus the
segment it needed); a trace without one but with frees of cached segments
right before new ones (the allocator making room under a cap) bounds it from
those; else the run is simulated uncapped. Where the cap is an interval,
each setting is simulated at both ends, and where it fails at the lower
end, the smallest cap under which it fits is searched (to 2 MiB, from a
copy of the simulation taken where the cap first mattered); the verdict
says which settings fit at any cap of the interval, which from a cap on,
which at none.

The table has one row per setting, the file's own first; '*' marks the
best: the setting that fits with the lowest peak reserved, when it does
better than the file's own (a setting the file already has is never
recommended).

--json prints {"devices":[{"device", "limit_bytes" (null: none; the lower
bound of an interval), "limit_source" ("flag", "oom-message",
"inferred-oom", "inferred-releases" or null),
"limit_inferred" ({"min_bytes","max_bytes"} or null), "self_check"
({"exact" (matches the trace, and the trace is the whole run),
"matches_trace", "diverged_at_entry" (null), "reason"}), "history"
({"exactness": "exact", "lower_bound" or "unknown", "why"}, as summary
--json gives it), "empty_cache_calls", "releases_before_new_segment"
(runs of cached-segment frees right before a new segment with no cap
given), "cap_below_file" (--limit is below what the file reserved),
"uncapped_peak_reserved_bytes" (with no cap, the file's settings; null when
not simulated), "candidates" ([{"conf" (as given for --conf), "source"
("file", "conf" or "candidate"), "peak_reserved_bytes",
"peak_allocated_bytes", "peaks_exactness", "oom", "oom_kind" ("none",
"oom", or "ends": the file served that request, so the run would have
ended there), "oom_entry" (null), "alloc_retries", "segments_allocated",
"unused_at_peak_bytes" (at the reserved peak),
"unused_at_allocated_peak_bytes", "fits_at_min_cap", "fits_at_max_cap",
"fits_from_bytes" (the smallest cap under which it fits; null where none
was found), "fits_from_exact", "best" (the row marked '*')}]), "verdict"
(the sentence under the table)}]}.

Trust. The file's peaks carry the marks summary gives them: '+' a lower
bound (the trace misses the start of the run), '?' unknown. On such a
trace the self-check can only match the trace, not the run, and a
comparison holds only over the part of the run the trace covers; the text
says so.

The trace must hold the requests: record with
torch.cuda.memory._record_memory_history() from the first allocation. A trace
that misses the start is simulated from the state the replay reconstructs,
and a request that failed in the file (an oom entry) is known only rounded
under the file's settings.`,
		Example: `  # Which setting would have avoided the OOM, the cap inferred from it
  snapview whatif snap.pickle

  # Under a 4.5 GiB cap, two settings of your own
  snapview whatif --limit 4.5GiB --conf expandable_segments:True \
      --conf "max_split_size_mb:256,garbage_collection_threshold:0.8" \
      snap.pickle

  # As JSON, device 1
  snapview whatif --json --device 1 snap.pickle`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runWhatif(cmd.Context(), opts, cmd.Flags().Changed("conf"), cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	cmd.Flags().StringArrayVar(&opts.confs, "conf", nil, "simulate `CONF`, a whole PYTORCH_CUDA_ALLOC_CONF value (repeatable; default: the candidates above)")
	cmd.Flags().StringVar(&opts.oomMsg, "oom-message", "", "torch's OutOfMemoryError message for the run, `TEXT` or @FILE: fixes the cap (\"N allowed\", else the free memory) and names the device's capacity and the processes' use")
	cmd.Flags().StringVar(&opts.limit, "limit", "", "the cap the process ran under: `BYTES`, or with a unit, 4656MiB, 4.5GiB (default: inferred from an OOM, else none)")
	addDeviceFlag(cmd.Flags(), &opts.device, "simulate only this CUDA device ordinal", "every device with a trace")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON instead of tables")
	return cmd
}

// runWhatif checks the flags, loads the snapshot and prints the analysis.
func runWhatif(ctx context.Context, opts *whatifOptions, confGiven bool, stdin io.Reader, out, errOut io.Writer) error {
	for _, c := range opts.confs {
		if _, err := allocator.Parse(c); err != nil {
			return &usageError{fmt.Errorf("--conf: %w", err)}
		}
	}
	limit, msg, err := parseCapFlags(opts.limit, opts.oomMsg)
	if err != nil {
		return err
	}
	confs := opts.confs
	if confGiven && confs == nil {
		confs = []string{}
	}
	return withSnapshotCtx(ctx, stdin, errOut, opts.file, func(s *snapshot.Snapshot, _ source) error {
		printWarnings(errOut, s.Warnings)
		devices, err := opts.device.pick(s)
		if err != nil {
			return err
		}
		devices = opts.device.shown(devices, errOut, "whatif")
		var withTrace []int
		for _, d := range devices {
			if hasTrace(s, d) {
				withTrace = append(withTrace, d)
			}
		}
		if len(withTrace) == 0 {
			return usageErrorf("no trace entries to simulate (record with torch.cuda.memory._record_memory_history() before the first allocation)")
		}
		v := &verdictview.WhatifView{}
		prog := progress.NewSim(errOut)
		an := analysis.New(s, analysis.Options{Mode: replay.StatsOnly})
		for _, d := range withTrace {
			r, err := an.WhatIf(d, whatif.Options{
				Limit: limit, Confs: confs, OOMMessage: msg,
				Progress: func(done, total int) { prog.Update(d, done, total) },
			})
			if err != nil {
				var pe *allocator.ParseError
				if errors.As(err, &pe) {
					return &usageError{err}
				}
				return err
			}
			v.Devices = append(v.Devices, r)
		}
		prog.Finish()
		for _, r := range v.Devices {
			if r.MessageNote != "" {
				// Most likely the message of another run: say so where
				// a script sees it, not only inside the report.
				fmt.Fprintf(errOut, "warning: device %d: --oom-message: %s\n", r.Device, r.MessageNote)
			}
		}
		if opts.json {
			return verdictview.WriteWhatifJSON(out, v)
		}
		return verdictview.WriteWhatif(out, v)
	})
}
