package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/report/monitorview"
)

// statsOptions are the flags of `snapview stats`.
type statsOptions struct {
	file   string
	device deviceFlag
	rows   int
	json   bool
}

func newStatsCmd() *cobra.Command {
	opts := &statsOptions{}
	cmd := &cobra.Command{
		Use:     "stats LOG",
		Short:   "read a log of memory_stats() dumps, one per step: per-step table, and whether memory keeps climbing",
		Long:    helpText("stats"),
		Example: helpText("stats.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if opts.rows < 0 {
				return usageErrorf("--rows must be 0 (all) or more, got %d", opts.rows)
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runStats(opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	addDeviceFlag(f, &opts.device, "show only this CUDA device ordinal", "every device in the log")
	f.IntVar(&opts.rows, "rows", 40, "most records shown per device, spread over the log, those the verdicts point at included (0: all)")
	f.BoolVar(&opts.json, "json", false, "print JSON: every record and the verdicts")
	return cmd
}

func runStats(opts *statsOptions, stdin io.Reader, out, errOut io.Writer) error {
	name, l, err := loadStatsLog(opts.file, stdin, errOut)
	if err != nil {
		return err
	}
	devs, err := pickDevices(opts.device, name, monitor.AnalyzeSteps(l), func(d monitor.StepsDevice) int { return d.Device })
	if err != nil {
		return err
	}
	v := &monitorview.StepsView{File: name, Devices: devs, Rows: opts.rows}
	if opts.json {
		return monitorview.WriteStepsJSON(out, v)
	}
	return monitorview.WriteStepsText(out, v)
}
