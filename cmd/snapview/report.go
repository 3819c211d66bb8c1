package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/atomicfile"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/compareview"
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
	align string
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
				expanded, err := reportDirFiles(args[0])
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
			if opts.align != "time" && opts.align != "step" {
				return usageErrorf("--align must be time or step, got %q", opts.align)
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
	f.StringVar(&opts.align, "align", "time", "line up the timelines of several files on one clock (time: time_us) or on their first steps (step)")
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
		return writeReport(ctx, opts, mon, s, src, stdout, stderr)
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

// writeReport writes the HTML report of s.
func writeReport(ctx context.Context, opts *reportOptions, mon *html.MonitorInput, s *snapshot.Snapshot, src source, stdout, stderr io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", kit.Escape(w))
	}
	devices, err := opts.device.pick(s)
	if err != nil {
		return err
	}
	if !opts.device.set && len(s.Devices()) == 0 && hasHost(s) {
		// Pinned host memory only (record_cuda=False): the page is its
		// host section, with no empty device 0 beside it.
		devices = []int{}
	}
	if mon != nil && mon.SMI != nil {
		var gpus []int
		for _, g := range mon.SMI {
			gpus = append(gpus, g.GPU)
		}
		mon.GPU = func(device int) (int, bool, error) { return smiGPUFor(gpus, device, opts.gpu, len(devices) > 1) }
	}
	ho := html.Options{Title: src.name, SizeOnDisk: s.Format.Bytes, Top: opts.top, Devices: devices, Monitor: mon}
	if src.size > 0 {
		ho.SizeOnDisk = src.size
	}
	r, err := html.Build(analysis.New(s, ho.Analysis()), ho)
	if err != nil {
		return fmt.Errorf("analysing the snapshot: %w", err)
	}
	if n := r.DevicesLeftOut; n > 0 {
		fmt.Fprintf(stderr, "warning: %d of the file's devices are left out of the report (over %d, the most it draws); --device N draws another\n", n, len(r.Devices))
	}
	return saveReport(ctx, opts, r, stdout, stderr)
}

// pageTextWidth is the width of the text tables a report of several
// files shows (the page scrolls sideways; a terminal's 80 or 120 columns
// would leave columns out).
const pageTextWidth = 240

// saveReport writes r where --output says.
func saveReport(ctx context.Context, opts *reportOptions, r *html.Report, stdout, stderr io.Writer) error {
	var buf bytes.Buffer
	if err := html.Write(&buf, r); err != nil {
		return err
	}
	if opts.output == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := atomicfile.Write(ctx, opts.output, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%s)\n", opts.output, units.Bytes(int64(buf.Len())))
	return nil
}

// writeReports writes one report of several files: the ranks table (or,
// with --base, the diff) on top, then each file's devices. Files are read
// one at a time; only each one's report and comparison figures are kept.
func writeReports(ctx context.Context, opts *reportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	var (
		reports []*html.Report
		sides   []*compare.Side
	)
	peak := steps.Moment{Kind: steps.MomentPeak}
	for i, path := range opts.files {
		err := withSnapshotCtx(ctx, stdin, stderr, path, func(s *snapshot.Snapshot, src source) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			for _, w := range s.Warnings {
				fmt.Fprintf(stderr, "warning: %s: %s\n", src.name, w)
			}
			devices, err := opts.device.pick(s)
			if err != nil {
				return err
			}
			if used := s.UsedDevices(); !opts.device.set && len(used) > 0 {
				// A rank's file lists the other ranks' devices with a
				// lone snapshot entry: nothing to draw.
				devices = used
			}
			ho := html.Options{Title: src.name, SizeOnDisk: s.Format.Bytes, Top: opts.top, Devices: devices}
			if src.size > 0 {
				ho.SizeOnDisk = src.size
			}
			f := analysis.New(s, ho.Analysis())
			r, err := html.Build(f, ho)
			if err != nil {
				return fmt.Errorf("analysing the snapshot: %w", err)
			}
			reports = append(reports, r)
			if opts.base != "" {
				// The diff compares one device of each file, as diff does.
				dev, _, err := stateDevice(s, &opts.device, peak)
				if err != nil {
					return err
				}
				devices = []int{dev}
			}
			so := compare.SideOptions{Recording: compare.NewFileRecording(s)}
			used := s.UsedDevices()
			for _, dev := range devices {
				if !slices.Contains(used, dev) {
					continue
				}
				// The replay the page was drawn from.
				sd, err := f.Side(dev, peak, so)
				if err != nil {
					return momentError(s, dev, peak, err)
				}
				sd.File = src.name
				sides = append(sides, sd)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if opts.base != "" && len(sides) != i+1 {
			return inFile(path, usageErrorf("nothing to compare: the snapshot holds no segments and no trace entries"))
		}
	}
	var text bytes.Buffer
	// The page scrolls: its tables keep every column a terminal would
	// leave out.
	tw := kit.NewWriter(&text, pageTextWidth)
	title := "Ranks"
	if opts.base != "" {
		title = "Diff"
		d := compare.Compare(sides[0], sides[1])
		if err := compareview.WriteDiff(tw, d, compareview.DiffOptions{BaseAt: "peak", NewAt: "peak", Top: 20, Frames: 8}); err != nil {
			return err
		}
	} else if len(sides) > 0 {
		if err := compareview.WriteRanks(tw, compare.CompareRanks(sides, 10), compareview.RanksOptions{Top: 10, Frames: 6}); err != nil {
			return err
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	name := strings.Join(opts.files, ", ")
	if opts.base != "" {
		name = opts.files[1] + " against " + opts.files[0]
	}
	m := html.Merge(reports, name, title, text.String())
	if opts.align == "step" {
		if err := html.AlignSteps(m); err != nil {
			return usageErrorf("--align step: %v", err)
		}
	}
	return saveReport(ctx, opts, m, stdout, stderr)
}

// reportDirFiles expands `report DIR` as `ranks DIR` does
// (compare.RankFiles): a directory becomes its snapshot files, one page
// for them all. A directory of several steps (torchtitan's one directory
// per step) is a usage error naming them, since a page compares one step's
// ranks. A path that is not a directory is returned as it is.
func reportDirFiles(path string) ([]string, error) {
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return []string{path}, nil
	}
	files, dir, err := compare.RankFiles([]string{path})
	if errors.Is(err, compare.ErrNoRankFiles) {
		return nil, &usageError{err}
	}
	if err != nil {
		return nil, err
	}
	if groups := compare.GroupRankFiles(dir, files); len(groups) > 1 {
		names := make([]string, len(groups))
		for i, g := range groups {
			names[i] = g.Name()
		}
		return nil, usageErrorf("%s holds %d steps (%s): report one step's directory or name its files", path, len(groups), strings.Join(names, ", "))
	}
	return files, nil
}
