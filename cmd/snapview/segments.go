package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/snapshot"
)

// segmentsOptions are the flags of `snapview segments`.
type segmentsOptions struct {
	file   string
	device deviceFlag
	json   bool
}

func newSegmentsCmd() *cobra.Command {
	opts := &segmentsOptions{}
	cmd := &cobra.Command{
		Use:     "segments FILE",
		Short:   "list the segments the allocator held, with a map of their blocks",
		Long:    helpText("segments"),
		Example: helpText("segments.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runSegments(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	addDeviceFlag(cmd.Flags(), &opts.device, "show only this CUDA device ordinal", "every device in the file")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON instead of tables")
	return cmd
}

// runSegments loads the snapshot and prints its segments.
func runSegments(ctx context.Context, opts *segmentsOptions, stdin io.Reader, out, errOut io.Writer) error {
	return withSnapshotCtx(ctx, stdin, errOut, opts.file, func(s *snapshot.Snapshot, _ source) error {
		printWarnings(errOut, s.Warnings)
		devices, err := opts.device.pick(s)
		if err != nil {
			return err
		}
		devices = opts.device.shown(devices, errOut, "segments")
		return report.WriteSegmentsOf(out, analysis.New(s, analysis.Options{Mode: replay.StatsOnly}), devices, opts.json)
	})
}
