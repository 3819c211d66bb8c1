package main

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/snapshot"
)

// reportOptions are the flags of `snapview report`.
type reportOptions struct {
	file   string
	output string
	device deviceFlag
	top    int
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
maximum of each bucket are kept, so peaks survive).`,
		Example: `  snapview report snapshot.pickle
  snapview report -o oom.html --top 5 run/oom_snapshot.pickle
  snapview report --device 1 -o - snapshot.pickle.gz > dev1.html`,
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
	return cmd
}

func runReport(ctx context.Context, opts *reportOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, src source) error {
		return writeReport(ctx, opts, s, src, stdout, stderr)
	})
}

// writeReport writes the HTML report of s.
func writeReport(ctx context.Context, opts *reportOptions, s *snapshot.Snapshot, src source, stdout, stderr io.Writer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", report.Escape(w))
	}
	devices, err := opts.device.pick(s)
	if err != nil {
		return err
	}
	// statsFromReplay makes the memory_summary() table the one `snapview
	// summary --format torch` prints, from the replay BuildHTML made.
	ho := report.HTMLOptions{Title: src.name, SizeOnDisk: s.Format.Bytes, Top: opts.top, Devices: devices, Stats: statsFromReplay}
	if src.size > 0 {
		ho.SizeOnDisk = src.size
	}
	r, err := report.BuildHTML(s, ho)
	if err != nil {
		return fmt.Errorf("analysing the snapshot: %w", err)
	}
	if n := r.DevicesLeftOut; n > 0 {
		fmt.Fprintf(stderr, "warning: %d of the file's devices are left out of the report (over %d, the most it draws); --device N draws another\n", n, len(r.Devices))
	}
	var buf bytes.Buffer
	if err := report.WriteHTML(&buf, r); err != nil {
		return err
	}
	if opts.output == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := writeFileAtomic(ctx, opts.output, func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%s)\n", opts.output, report.FormatBytes(int64(buf.Len())))
	return nil
}
