package main

import (
	"context"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/snapshot"
)

// infoOptions are the flags of `snapview info`.
type infoOptions struct {
	file   string
	device deviceFlag
	json   bool
}

func newInfoCmd() *cobra.Command {
	opts := &infoOptions{}
	cmd := &cobra.Command{
		Use:   "info FILE",
		Short: "say what a snapshot file holds, how it was recorded, and what snapview can and cannot tell from it",
		Long: `Info describes a snapshot file before you read the other views: what it is,
what it holds, and what it can and cannot tell.

  File        the path, the size on disk, the encoding (pickle protocol,
              JSON, gzip or xz) and the decoded size
  Layout      the keys of the top-level dict, or a bare segment list
              (torch.cuda.memory_snapshot())
  PyTorch     a hint at the release that wrote the file, from the fields
  version     present (allocator_settings: 2.3 or newer, compile_context on
              trace entries: 2.8 or newer, no time_us: older than 2.2, ...),
              each clue with the PyTorch change it comes from. A hint, not a
              certainty.
  Devices     per device: segments, blocks, reserved and allocated bytes,
              trace entries, their time span and actions, OOMs, whether the
              trace covers the run from the start, started late or wrapped,
              and whether replaying the trace ends in the file's segments
  Recording   the _record_memory_history arguments as far as the file shows
              them: enabled (all, state, off), stacks (python, or all when
              C++ frames are present), context (none, state, alloc, all) and
              max_entries (the likely value when the trace wrapped, a lower
              bound otherwise), each with the evidence
  Allocator   allocator_settings as recorded (PyTorch 2.3 or newer)
  settings
  Unknown     keys, block states and actions from a newer PyTorch, with
              counts: they are skipped, not fatal
  Warnings    what to know before trusting the other views: no history
              recorded (and how to record one), a trace that wrapped or
              started late, blocks and entries without stacks and the
              likely cause, an empty file, the decoder's own warnings

Everything is printed to stdout, warnings included. --json prints the same
facts as JSON (byte figures unrounded, time_us in microseconds since the
Unix epoch). --device N keeps only that device in Devices; the other
sections are about the whole file.`,
		Example: `  # What is in this file, and how was it recorded?
  snapview info snap.pickle

  # The inferred stacks setting, for a script
  snapview info --json snap.pickle | jq -r .recording.stacks.value`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runInfo(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	addDeviceFlag(cmd.Flags(), &opts.device, "describe only this CUDA device ordinal in Devices", "every device in the file")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON instead of text")
	return cmd
}

// runInfo loads the snapshot and describes it.
func runInfo(ctx context.Context, opts *infoOptions, stdin io.Reader, out, errOut io.Writer) error {
	return withSnapshotCtx(ctx, stdin, errOut, opts.file, func(s *snapshot.Snapshot, src source) error {
		if err := opts.device.check(s); err != nil {
			return err
		}
		f := analysis.New(s, analysis.Options{Mode: replay.StatsOnly})
		v := report.NewInfo(src.name, src.size, s.Format, f.Info(nil))
		if opts.device.set {
			v.Devices = slices.DeleteFunc(v.Devices, func(d info.DeviceInfo) bool { return d.Device != opts.device.n })
		}
		if opts.json {
			return report.WriteInfoJSON(out, v)
		}
		return report.WriteInfo(out, v)
	})
}
