package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/explain"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
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
		Use:     "explain FILE",
		Short:   "say what went wrong, why, and what to change: OOM causes, blocking allocations, leaks, the recording",
		Long:    helpText("explain"),
		Example: helpText("explain.examples"),
		Args:    exactArgs(1),
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
		an := analysis.New(s, analysis.Options{States: analysis.ExplainStates})
		devs, notes, err := an.ExplainChosen(ctx, opts.device.choice(), explain.Options{Whatif: whatif.Options{Limit: limit, OOMMessage: msg}})
		kit.WriteNotes(errOut, notes)
		if err != nil {
			return err
		}
		v := verdictview.NewExplainView(s, devs)
		v.Host = hostview.NewJSON(an.Host()) // the host section the text shows
		if opts.json {
			return verdictview.WriteExplainJSON(out, v)
		}
		if len(devs) == 0 {
			return writeNothing(out, an, "the snapshot")
		}
		if err := verdictview.WriteExplain(out, v); err != nil {
			return err
		}
		return hostview.WriteAfter(out, s, an.Host())
	})
}
