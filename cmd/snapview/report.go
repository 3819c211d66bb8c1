package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/snapshot"
)

// reportOptions are the flags of `snapview report`.
type reportOptions struct {
	file   string
	output string
	device deviceFlag
	top    int
	// smi, stats, tz and gpu are the monitoring logs set against the
	// timeline (see monitorInput).
	smi, stats, tz string
	gpu            deviceFlag
}

func newReportCmd() *cobra.Command {
	opts := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report FILE",
		Short: "write a self-contained HTML report: timeline, summary, segments, leaks",
		Long: `report writes one HTML file about a snapshot that opens in any browser
with no network: everything it needs (the ECharts library included) is
inside the file, and the page makes no request.

For each device it shows:
  - a timeline of memory: live bytes stacked by allocation stack (the top
    --top stacks, the rest as "other"), the active and reserved bytes,
    markers for the peak and each OOM, and the record_function ranges;
    zoom with the wheel or the slider, hover for bytes and stacks;
  - the memory_summary() table;
  - the segments at the peak, each a bar of its blocks;
  - the suspected leaks with their stacks;
and what the file holds, with the decoder's warnings.

The x axis is the time since the first trace entry, or the entry number
when the trace has no times. Long traces are downsampled (the minimum and
maximum of each bucket are kept, so peaks survive).

Monitoring logs (--smi, --stats):

  --smi LOG.csv, an nvidia-smi log (see snapview smi), draws the GPU's
  memory.used on the timeline and in a chart of its own with PyTorch's
  reserved bytes and the gap between them: memory PyTorch's caching
  allocator did not reserve (the CUDA context, communication buffers, other
  libraries' cudaMalloc, other processes), with its lasting jumps and what
  they mean. The snapshot's times (time_us) are microseconds since the
  epoch; nvidia-smi's timestamps are the local time of the machine it ran
  on: --tz names that zone (default: this machine's). Device N is matched
  with nvidia-smi's GPU N; a report of one device (--device) takes the
  log's only GPU, or the one --gpu names (nvidia-smi's index differs from
  the CUDA ordinal under CUDA_VISIBLE_DEVICES).

  --stats LOG.jsonl, a memory_stats() log (see snapview stats), adds its
  allocated and reserved bytes at each step's end, the per-step table, and
  the verdicts: whether memory keeps climbing and from which step, and when
  cudaMalloc retries began.`,
		Example: `  snapview report snapshot.pickle
  snapview report -o oom.html --top 5 run/oom_snapshot.pickle
  snapview report --device 1 -o - snapshot.pickle.gz > dev1.html
  snapview report snap.pickle --smi smi.csv --stats train_memory.jsonl --tz UTC`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if opts.top < 1 {
				return usageErrorf("--top must be at least 1, got %d", opts.top)
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
	f.StringVar(&opts.smi, "smi", "", "an nvidia-smi CSV log to set against the timeline (see snapview smi)")
	f.StringVar(&opts.stats, "stats", "", "a JSON Lines log of memory_stats() per step to set against the timeline (see snapview stats)")
	f.StringVar(&opts.tz, "tz", "Local", "the zone --smi's timestamps were written in: a name (Europe/Berlin), UTC, Local or an offset (+02:00)")
	f.Var(&opts.gpu, "gpu", "the nvidia-smi index of the reported device, when the report has one (default: the same number, or the log's only GPU)")
	return cmd
}

func runReport(ctx context.Context, opts *reportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	mon, err := monitorInput(opts, stdin, stderr)
	if err != nil {
		return err
	}
	return withSnapshot(stdin, stderr, opts.file, func(s *snapshot.Snapshot, src source) error {
		return writeReport(ctx, opts, mon, s, src, stdout, stderr)
	})
}

// monitorInput reads the logs of --smi and --stats; nil without them.
// They are read before the snapshot, so that a bad log fails fast.
func monitorInput(opts *reportOptions, stdin io.Reader, stderr io.Writer) (*report.MonitorInput, error) {
	if opts.smi == "" && opts.stats == "" {
		return nil, nil
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
	in := &report.MonitorInput{Loc: loc}
	if opts.smi != "" {
		name, l, err := loadSMI(opts.smi, nil, loc, stderr)
		if err != nil {
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
func writeReport(ctx context.Context, opts *reportOptions, mon *report.MonitorInput, s *snapshot.Snapshot, src source, stdout, stderr io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	devices, err := opts.device.pick(s)
	if err != nil {
		return err
	}
	if mon != nil && mon.SMI != nil {
		var gpus []int
		for _, g := range mon.SMI {
			gpus = append(gpus, g.GPU)
		}
		mon.GPU = func(device int) (int, bool, error) { return smiGPUFor(gpus, device, opts.gpu, len(devices) > 1) }
	}
	// statsFromReplay makes the memory_summary() table the one `snapview
	// summary --format torch` prints, from the replay BuildHTML made.
	ho := report.HTMLOptions{Title: src.name, SizeOnDisk: s.Format.Bytes, Top: opts.top, Devices: devices, Stats: statsFromReplay, Monitor: mon}
	if src.size > 0 {
		ho.SizeOnDisk = src.size
	}
	r, err := report.BuildHTML(s, ho)
	if err != nil {
		return fmt.Errorf("analysing the snapshot: %w", err)
	}
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, r); err != nil {
		return err
	}
	if opts.output == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	if err := os.WriteFile(opts.output, buf.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%s)\n", opts.output, report.FormatBytes(int64(buf.Len())))
	return nil
}
