package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/progress"
	"github.com/snapview/snapview/report/kit"
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
		Use:     "whatif FILE",
		Short:   "simulate the caching allocator under other PYTORCH_CUDA_ALLOC_CONF settings and a memory cap",
		Long:    helpText("whatif"),
		Example: helpText("whatif.examples"),
		Args:    exactArgs(1),
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
		prog := progress.NewSim(errOut)
		an := analysis.New(s, analysis.Options{Mode: replay.StatsOnly})
		res, notes, err := an.WhatIfChosen(opts.device.choice(), whatif.Options{Limit: limit, Confs: confs, OOMMessage: msg}, prog.Update)
		prog.Finish()
		kit.WriteNotes(errOut, notes)
		if err != nil {
			return err
		}
		v := &verdictview.WhatifView{Devices: res}
		if opts.json {
			return verdictview.WriteWhatifJSON(out, v)
		}
		return verdictview.WriteWhatif(out, v)
	})
}
