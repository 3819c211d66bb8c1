package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analyze/slice"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
	"github.com/snapview/snapview/snapshot/dump"
)

// sliceOptions are the flags of `snapview slice`.
type sliceOptions struct {
	file     string
	from, to string
	around   string
	entries  int
	device   deviceFlag
	out      string
	format   string
}

func newSliceCmd() *cobra.Command {
	opts := &sliceOptions{}
	cmd := &cobra.Command{
		Use:     "slice FILE",
		Short:   "cut a window of a device's trace into a snapshot of its own, as _dump_snapshot writes one",
		Long:    helpText("slice"),
		Example: helpText("slice.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if err := opts.check(cmd); err != nil {
				return err
			}
			return runSlice(cmd.Context(), opts, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.from, "from", "", "the window's first moment: peak, oom, oom:K, end, entry:N, time:T or step:K (default: the first entry)")
	f.StringVar(&opts.to, "to", "", "the window's last moment (default: the last entry)")
	f.StringVar(&opts.around, "around", "", "cut --entries entries centred on this moment (peak, oom, or any MOMENT) instead of --from/--to")
	f.IntVar(&opts.entries, "entries", 10000, "the window's entries with --around (at least 1)")
	addDeviceFlag(f, &opts.device, "cut this CUDA device ordinal's trace", "for --around oom the first device with one, else the first with a trace")
	f.StringVarP(&opts.out, "output", "o", "", "the file to write (required; - for standard output)")
	f.StringVar(&opts.format, "format", "pickle", "pickle (protocol 4), or json: the JSON layout memory_viz accepts")
	return cmd
}

func (o *sliceOptions) check(cmd *cobra.Command) error {
	if o.out == "" {
		return usageErrorf("slice needs -o OUT: the file to write (- for standard output)")
	}
	if o.format != "pickle" && o.format != "json" {
		return usageErrorf("--format %q: want pickle or json", o.format)
	}
	if o.around != "" && (o.from != "" || o.to != "") {
		return usageErrorf("--around takes the place of --from and --to: give one or the other")
	}
	if cmd.Flags().Changed("entries") && o.around == "" {
		return usageErrorf("--entries sizes the window of --around: give --around peak, oom or a MOMENT")
	}
	if o.entries < 1 {
		return usageErrorf("--entries must be at least 1, got %d", o.entries)
	}
	for _, fl := range []struct{ name, v string }{{"--from", o.from}, {"--to", o.to}, {"--around", o.around}} {
		if fl.v != "" {
			if _, err := parseMomentFlag(fl.name, fl.v); err != nil {
				return err
			}
		}
	}
	return nil
}

// request returns the window the flags ask for, its moments parsed.
func (o *sliceOptions) request() slice.Request {
	parse := func(flag, v string) *steps.Moment {
		if v == "" {
			return nil
		}
		m, _ := parseMomentFlag(flag, v)
		return &m
	}
	return slice.Request{From: parse("--from", o.from), To: parse("--to", o.to), Around: parse("--around", o.around),
		FromText: o.from, ToText: o.to, Entries: o.entries}
}

func runSlice(ctx context.Context, opts *sliceOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	q := opts.request()
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, _ source) error {
		printWarnings(stderr, s.Warnings)
		which := steps.Moment{Kind: steps.MomentEnd}
		if q.Around != nil {
			which = *q.Around
		}
		dev, note, err := stateDevice(s, &opts.device, which)
		if err != nil {
			return err
		}
		if dev < 0 || !hasTrace(s, dev) {
			if dev < 0 {
				return usageErrorf("the snapshot has no trace entries: there is nothing to slice (record with torch.cuda.memory._record_memory_history)")
			}
			return usageErrorf("device %d has no trace entries: there is nothing to slice%s", dev, tracedHint(s))
		}
		if note != "" {
			fmt.Fprintf(stderr, "note: %s\n", kit.Escape(note))
		}
		sl, w, notes, err := q.Cut(ctx, s, dev)
		if err != nil {
			return windowError(s, dev, err)
		}
		for _, n := range notes {
			fmt.Fprintf(stderr, "note: %s\n", n)
		}
		write := dump.Writer(opts.format)
		if err := writeOutput(ctx, opts.out, stdout, func(out io.Writer) error { return write(out, sl) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s: entries %d to %d of device %d (%d of %d entries), %d segments, %d annotations\n",
			opts.out, w.From, w.To, dev, w.Entries(), len(s.Traces[dev]), len(sl.Segments), len(sl.Annotations))
		return nil
	})
}

// windowError is an error of slice.Request.Window as the command's: a
// moment that does not resolve names its flag (a usage error where
// resolveMomentFlag makes one), a window that cannot be cut is a usage
// error.
func windowError(s *snapshot.Snapshot, dev int, err error) error {
	var (
		fe *slice.FlagError
		we *slice.WindowError
	)
	switch {
	case errors.As(err, &fe) && fe.Resolve:
		return renameFlag(momentError(s, dev, fe.Moment, fe.Err), fe.Flag)
	case errors.As(err, &fe):
		return renameFlag(fe.Err, fe.Flag)
	case errors.As(err, &we):
		return &usageError{we}
	}
	return err
}
