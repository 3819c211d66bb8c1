package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/monitorview"
	"github.com/snapview/snapview/snapshot"
)

// summaryFormats are the values of summary --format, the default first.
var summaryFormats = []string{"text", "torch", "json"}

// summaryOptions are the flags of `snapview summary`.
type summaryOptions struct {
	file   string
	device deviceFlag
	format string
	json   bool
}

func newSummaryCmd() *cobra.Command {
	opts := &summaryOptions{}
	cmd := &cobra.Command{
		Use:     "summary FILE",
		Short:   "print the memory figures of each device, as text, torch's memory_summary() table or JSON",
		Long:    helpText("summary"),
		Example: helpText("summary.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if !slices.Contains(summaryFormats, opts.format) {
				return usageErrorf("--format %q: want one of %s", opts.format, strings.Join(summaryFormats, ", "))
			}
			if opts.json {
				if cmd.Flags().Changed("format") && opts.format != "json" {
					return usageErrorf("--json and --format %s: give one of them", opts.format)
				}
				opts.format = "json"
			}
			kind, in := sniffInput(opts.file, cmd.InOrStdin())
			if kind == monitor.KindSMI {
				return monitor.WrongKind(opts.file, kind, "a memory snapshot or memory_stats() dump")
			}
			return withTextOutput(cmd, opts.format == "text" || opts.format == "", func(out io.Writer) error {
				if kind == monitor.KindStats || kind == monitor.KindStatsLog {
					return runStatsSummary(opts, kind, in, out, cmd.ErrOrStderr())
				}
				return runSummary(cmd.Context(), opts, in, out, cmd.ErrOrStderr())
			})
		},
	}
	addDeviceFlag(cmd.Flags(), &opts.device, "show only this CUDA device ordinal", "every device in the file")
	cmd.Flags().StringVarP(&opts.format, "format", "f", summaryFormats[0], "output format: "+strings.Join(summaryFormats, ", "))
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON: the same as --format json")
	return cmd
}

// runSummary loads the snapshot and prints its summary.
func runSummary(ctx context.Context, opts *summaryOptions, stdin io.Reader, out, errOut io.Writer) error {
	return withSnapshotCtx(ctx, stdin, errOut, opts.file, func(s *snapshot.Snapshot, src source) error {
		printWarnings(errOut, s.Warnings)
		devices, err := opts.device.pick(s)
		if err != nil {
			return err
		}
		devices = opts.device.shown(devices, errOut, "the summary")
		f := analysis.New(s, analysis.Options{Mode: replay.StatsOnly})
		all, notes := f.StatsOf(devices)
		kit.WriteNotes(errOut, notes)
		return report.WriteSummaryAs(out, opts.format, src.name, f, all)
	})
}

// printWarnings prints each warning on its own "warning:" line.
func printWarnings(w io.Writer, warnings []string) {
	for _, m := range warnings {
		fmt.Fprintf(w, "warning: %s\n", kit.Escape(m))
	}
}

// runStatsSummary prints the summary of a memory_stats() dump, or of the
// last record of each device in a log of them.
func runStatsSummary(opts *summaryOptions, kind monitor.Kind, in io.Reader, out, errOut io.Writer) error {
	var dump *monitorview.StatsDump
	filter := true // whether --device picks among the dump's devices
	if kind == monitor.KindStats {
		name, stats, named, err := loadStatsDump(opts.file, in, opts.device)
		if err != nil {
			return err
		}
		dump, filter = &monitorview.StatsDump{File: name, Stats: stats}, named
	} else {
		name, l, err := loadStatsLog(opts.file, in, errOut)
		if err != nil {
			return err
		}
		dump = monitorview.LastRecords(name, l)
	}
	// A flat dump is not filtered: --device said which device it was
	// taken on.
	if filter {
		var err error
		if dump.Stats, err = pickDevices(opts.device, dump.File, dump.Stats, func(st *stats.MemoryStats) int { return st.Device }); err != nil {
			return err
		}
	}
	if opts.format != "torch" {
		return monitorview.WriteStatsDumpAs(out, dump, opts.format == "json")
	}
	if kind == monitor.KindStatsLog {
		fmt.Fprintf(errOut, "%s: %s\n", dump.File, dump.From)
	}
	return report.WriteTorchTables(out, dump.Stats)
}
