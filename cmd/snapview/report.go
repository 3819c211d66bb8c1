package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/internal/atomicfile"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/html"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// reportOptions are the flags of `snapview report`.
type reportOptions struct {
	file   string
	files  []string // several files: the ranks, or --base and FILE
	base   string
	output string
	device deviceFlag
	top    int
	// smi, stats, tz and gpu are the monitoring logs set against the
	// timeline (see monitorInput).
	smi, stats, tz string
	gpu            deviceFlag
	// align is how a page of several files lines its timelines up:
	// "time" (one clock, time_us) or "step" (their first steps).
	align alignFlag
}

func newReportCmd() *cobra.Command {
	opts := &reportOptions{}
	cmd := &cobra.Command{
		Use:     "report FILE | report FILE... | report --base BASE FILE",
		Short:   "write a self-contained HTML report: timeline, summary, segments, leaks",
		Long:    helpText("report"),
		Example: helpText("report.examples"),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("report requires FILE (or several, or --base BASE FILE)")
			}
			if cmd.Flags().Changed("base") && len(args) != 1 {
				return usageErrorf("report --base BASE FILE compares one FILE with BASE; got %d files", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && opts.base == "" {
				// report DIR: the ranks page of the directory's snapshot
				// files, found as ranks DIR finds them.
				expanded, err := analysis.OneStepFiles(args[0])
				if err != nil {
					return err
				}
				args = expanded
			}
			opts.file = args[0]
			if len(args) > 1 || opts.base != "" {
				opts.files = args
				if opts.base != "" {
					opts.files = []string{opts.base, args[0]}
				}
			}
			if opts.files != nil {
				// A page of several files draws no monitoring log: refuse
				// them rather than drop them silently.
				var given []string
				for _, fl := range []string{"smi", "stats", "tz", "gpu"} {
					if cmd.Flags().Changed(fl) {
						given = append(given, "--"+fl)
					}
				}
				if len(given) > 0 {
					what := "a report of several files"
					if opts.base != "" {
						what = "a report with --base"
					}
					return usageErrorf("%s: %s does not draw monitoring logs; report one FILE with them", strings.Join(given, ", "), what)
				}
			}
			if opts.top < 1 {
				return usageErrorf("--top must be at least 1, got %d", opts.top)
			}
			if err := opts.align.parse(); err != nil {
				return err
			}
			if opts.output == "" {
				return usageErrorf("--output must name a file, or - for standard output")
			}
			return runReport(cmd.Context(), opts, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&opts.output, "output", "o", "report.html", "write the report to this file (- for standard output)")
	addDeviceFlag(f, &opts.device, "report only this CUDA device ordinal", "every device in the file")
	f.IntVar(&opts.top, "top", 10, "number of allocation stacks drawn separately and of leak rows (at least 1)")
	f.StringVar(&opts.base, "base", "", "compare FILE with this snapshot (as snapview diff BASE FILE) on one page")
	addAlignFlag(f, &opts.align, "the timelines of several files")
	f.StringVar(&opts.smi, "smi", "", "an nvidia-smi CSV log to set against the timeline (see snapview smi)")
	f.StringVar(&opts.stats, "stats", "", "a JSON Lines log of memory_stats() per step to set against the timeline (see snapview stats)")
	f.StringVar(&opts.tz, "tz", "Local", "the zone --smi's timestamps were written in: a name (Europe/Berlin), UTC, Local or an offset (+02:00)")
	f.Var(&opts.gpu, "gpu", "the nvidia-smi index of the reported device, when the report has one (default: the same number, or the log's only GPU)")
	return cmd
}

func runReport(ctx context.Context, opts *reportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(opts.files) > 0 {
		return writeReports(ctx, opts, stdin, stdout, stderr)
	}
	mon, err := monitorInput(opts, stdin, stderr)
	if err != nil {
		return err
	}
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, src source) error {
		r, notes, err := html.BuildFile(ctx, s, analysis.Source{Name: src.name, Size: src.size}, html.FileOptions{
			Device: opts.device.choice(), Top: opts.top, Monitor: mon, GPU: opts.gpu.choice(),
		})
		kit.WriteNotes(stderr, notes)
		if err != nil {
			return err
		}
		return saveReport(ctx, opts, r, stdout, stderr)
	})
}

// monitorInput reads the logs of --smi and --stats; nil without them.
// They are read before the snapshot, so that a bad log fails fast.
func monitorInput(opts *reportOptions, stdin io.Reader, stderr io.Writer) (*html.MonitorInput, error) {
	if opts.smi == "" && opts.stats == "" {
		return nil, checkGPUFlag(opts.gpu, false, "--smi", "", nil)
	}
	for _, f := range []string{opts.smi, opts.stats} {
		if f == stdinPath {
			return nil, usageErrorf("--smi and --stats read files, not standard input")
		}
	}
	loc, err := parseZone(opts.tz)
	if err != nil {
		return nil, err
	}
	in := &html.MonitorInput{Loc: loc}
	if opts.smi != "" {
		name, l, err := loadSMI(opts.smi, nil, loc, stderr)
		if err != nil {
			return nil, err
		}
		if err := checkGPUFlag(opts.gpu, true, "--smi", name, l.GPUs()); err != nil {
			return nil, err
		}
		in.SMIName, in.SMI = name, monitor.SummarizeSMI(l)
	}
	if opts.stats != "" {
		name, l, err := loadStatsLog(opts.stats, nil, stderr)
		if err != nil {
			return nil, err
		}
		in.StatsName, in.Stats = name, monitor.AnalyzeSteps(l)
	}
	return in, nil
}

// saveReport writes r where --output says.
func saveReport(ctx context.Context, opts *reportOptions, r *html.Report, stdout, stderr io.Writer) error {
	if opts.output == "-" {
		// Whole or nothing on stdout: a failed build writes no half page.
		var buf bytes.Buffer
		if err := html.Write(&buf, r); err != nil {
			return err
		}
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var n int64
	if err := atomicfile.Write(ctx, opts.output, func(w io.Writer) error {
		cw := &countingWriter{w: w}
		err := html.Write(cw, r)
		n = cw.n
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%s)\n", opts.output, units.Bytes(n))
	return nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeReports writes one report of several files (html.BuildFiles): the
// ranks table (or, with --base, the diff) on top, then each file's
// devices.
func writeReports(ctx context.Context, opts *reportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	m, notes, err := html.BuildFiles(ctx, openFile(stdin, stderr), opts.files, html.FileOptions{
		Device: opts.device.choice(), Top: opts.top, Base: opts.base != "", Align: opts.align.mode,
	})
	kit.WriteNotes(stderr, notes)
	if err != nil {
		return momentUsage(err)
	}
	return saveReport(ctx, opts, m, stdout, stderr)
}
