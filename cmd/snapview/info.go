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
		Use:     "info FILE",
		Short:   "say what a snapshot file holds, how it was recorded, and what snapview can and cannot tell from it",
		Long:    helpText("info"),
		Example: helpText("info.examples"),
		Args:    exactArgs(1),
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
		v.Devices = v.Devices[:len(opts.device.shown(v.DeviceNumbers(), errOut, "info's Devices"))]
		return report.WriteInfoAs(out, v, opts.json)
	})
}
