package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analyze/replay"
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

// moments returns the moments the window needs, parsed.
func (o *sliceOptions) moments() (from, to, around *steps.Moment) {
	parse := func(flag, v string) *steps.Moment {
		if v == "" {
			return nil
		}
		m, _ := parseMomentFlag(flag, v)
		return &m
	}
	return parse("--from", o.from), parse("--to", o.to), parse("--around", o.around)
}

func runSlice(ctx context.Context, opts *sliceOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	from, to, around := opts.moments()
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, _ source) error {
		for _, w := range s.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", kit.Escape(w))
		}
		which := steps.Moment{Kind: steps.MomentEnd}
		if around != nil {
			which = *around
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
		r, err := sliceReplay(s, dev, from, to, around)
		if err != nil {
			return err
		}
		w, err := sliceWindow(s, r, from, to, around, opts)
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sl, err := slice.Cut(s, r, w)
		if err != nil {
			return err
		}
		for _, n := range slice.Notes(s, r, w) {
			fmt.Fprintf(stderr, "note: %s\n", n)
		}
		if r.Seeded {
			fmt.Fprintf(stderr, "note: device %d's trace misses the start of the run: the slice's state comes from the replay seeded from the file's segments (%s)\n", dev, r.Stats.Known.Why)
		}
		write := dump.Pickle
		if opts.format == "json" {
			write = dump.JSON
		}
		if err := writeOutput(ctx, opts.out, stdout, func(out io.Writer) error { return write(out, sl) }); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s: entries %d to %d of device %d (%d of %d entries), %d segments, %d annotations\n",
			opts.out, w.From, w.To, dev, w.Entries(), len(s.Traces[dev]), len(sl.Segments), len(sl.Annotations))
		return nil
	})
}

// sliceReplay replays dev as far as the moments need: the allocations
// for step:K, the peaks and OOMs for peak and oom, the end figures
// otherwise (the cheapest).
func sliceReplay(s *snapshot.Snapshot, dev int, ms ...*steps.Moment) (*replay.Result, error) {
	needs := 0 // 0: stats, 1: peaks, 2: everything
	for _, m := range ms {
		switch {
		case m == nil:
		case m.Kind == steps.MomentStep:
			needs = 2
		case m.Kind == steps.MomentPeak || m.Kind == steps.MomentOOM:
			needs = max(needs, 1)
		}
	}
	mode := replay.StatsOnly
	switch needs {
	case 2:
		mode = replay.Full
	case 1:
		mode = replay.Peaks
	}
	return replay.Run(s, dev, replay.Options{Mode: mode})
}

// sliceWindow resolves the window's moments on r's device.
func sliceWindow(s *snapshot.Snapshot, r *replay.Result, from, to, around *steps.Moment, opts *sliceOptions) (slice.Window, error) {
	dev, n := r.Device, len(s.Traces[r.Device])
	if around != nil {
		i, err := resolveMomentFlag("--around", s, r, *around)
		if err != nil {
			return slice.Window{}, err
		}
		return slice.Around(dev, max(i, 0), opts.entries, n), nil
	}
	w := slice.Window{Device: dev, From: 0, To: n - 1}
	if from != nil {
		if _, err := resolveMomentFlag("--from", s, r, *from); err != nil {
			return w, err
		}
		i, err := from.ResolveFirst(s, r)
		if err != nil {
			return w, renameFlag(err, "--from")
		}
		if i >= n {
			return w, usageErrorf("--from %s: device %d has no entry at or after it (its last is at %s)", opts.from, dev, lastTime(s.Traces[dev]))
		}
		w.From = i
	}
	if to != nil {
		i, err := resolveMomentFlag("--to", s, r, *to)
		if err != nil {
			return w, err
		}
		if i < 0 {
			return w, usageErrorf("--to %s: that is before device %d's first entry: the window would be empty", opts.to, dev)
		}
		w.To = i
	}
	if w.From == w.To+1 {
		return w, usageErrorf("no entry of device %d lies between --from %s and --to %s (entry %d is the first at or after --from, entry %d the last at or before --to): the window would be empty", dev, orFirst(opts.from), orLast(opts.to), w.From, w.To)
	}
	if w.From > w.To {
		return w, usageErrorf("--from %s comes after --to %s on device %d (entry %d after entry %d)", orFirst(opts.from), orLast(opts.to), dev, w.From, w.To)
	}
	return w, nil
}

func orFirst(s string) string {
	if s == "" {
		return "(the first entry)"
	}
	return s
}

func orLast(s string) string {
	if s == "" {
		return "(the last entry)"
	}
	return s
}

// lastTime is the time_us of a trace's last entry, for messages.
func lastTime(t []snapshot.TraceEntry) string {
	if len(t) == 0 || t[len(t)-1].Flags&snapshot.FlagTime == 0 {
		return "no time"
	}
	return fmt.Sprintf("time_us %d", t[len(t)-1].TimeUS)
}
