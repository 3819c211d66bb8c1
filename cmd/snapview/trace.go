package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/snapshot"
)

// traceOptions are the flags of `snapview trace`.
type traceOptions struct {
	file     string
	from, to string
	addr     string
	focus    string
	json     bool
	format   string
	device   deviceFlag
}

func newTraceCmd() *cobra.Command {
	opts := &traceOptions{}
	cmd := &cobra.Command{
		Use:     "trace FILE",
		Short:   "list the trace entries: time, action, size, address, where",
		Long:    helpText("trace"),
		Example: helpText("trace.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if opts.format != "text" && opts.format != "memviz" {
				return usageErrorf("--format %q: want text or memviz", opts.format)
			}
			if opts.format == "memviz" {
				for _, fl := range []string{"from", "to", "addr", "focus", "json", "device"} {
					if cmd.Flags().Changed(fl) {
						return usageErrorf("--format memviz prints the whole trace as _memory_viz does: --%s does not apply", fl)
					}
				}
			}
			for _, fl := range []struct{ name, v string }{{"--from", opts.from}, {"--to", opts.to}} {
				if fl.v != "" {
					if _, err := parseMomentFlag(fl.name, fl.v); err != nil {
						return err
					}
				}
			}
			if opts.addr != "" {
				if _, err := parseAddr(opts.addr); err != nil {
					return err
				}
			}
			if opts.focus != "" {
				if _, err := regexp.Compile(opts.focus); err != nil {
					return usageErrorf("--focus: %v", err)
				}
			}
			return withTextOutput(cmd, opts.format == "text" && !opts.json, func(out io.Writer) error {
				return runTrace(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.from, "from", "", "first entry listed: peak, oom, oom:K, end, entry:N or time:T (default: the first)")
	f.StringVar(&opts.to, "to", "", "last entry listed, same moments (default: the last)")
	f.StringVar(&opts.addr, "addr", "", "keep the entries whose address range holds ADDR (0x... or decimal)")
	f.StringVar(&opts.focus, "focus", "", "keep the entries with a frame matching this regular expression")
	f.BoolVar(&opts.json, "json", false, "write JSON: every entry with its frames")
	f.StringVar(&opts.format, "format", "text", "text, or memviz: exactly what python -m torch.cuda._memory_viz trace prints")
	addDeviceFlag(f, &opts.device, "list this CUDA device ordinal", "every device with a trace")
	return cmd
}

// parseAddr parses --addr: hex with 0x, or decimal (as _memory_viz prints
// addresses).
func parseAddr(s string) (snapshot.Addr, error) {
	var (
		v   uint64
		err error
	)
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		v, err = strconv.ParseUint(h, 16, 64)
	} else {
		v, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil {
		return 0, usageErrorf("--addr %q: want an address, 0x7f3a2c000000 or decimal", s)
	}
	return snapshot.Addr(v), nil
}

func runTrace(ctx context.Context, opts *traceOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, src source) error {
		for _, w := range s.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if opts.format == "memviz" {
			err := report.WriteMemvizTrace(stdout, s)
			if errors.Is(err, report.ErrNoDeviceTraces) {
				return &usageError{err}
			}
			return err
		}
		var devs []int
		if opts.device.set {
			if opts.device.n >= len(s.Traces) || len(s.Traces[opts.device.n]) == 0 {
				return usageErrorf("device %d has no trace entries%s", opts.device.n, tracedHint(s))
			}
			devs = []int{opts.device.n}
		} else {
			// Every device with entries but those the allocator was never
			// used on (another rank's, in a distributed process's file).
			idle := s.IdleDevices()
			for d := range s.Traces {
				if len(s.Traces[d]) > 0 && !slices.Contains(idle, d) {
					devs = append(devs, d)
				}
			}
		}
		if len(devs) == 0 {
			if opts.json {
				_, err := io.WriteString(stdout, "{\"entries\": []}\n")
				return err
			}
			if hasHost(s) && len(s.Devices()) == 0 {
				// record_cuda=False: the host allocator's history, not
				// none.
				return writeNothing(stdout, analysis.New(s, analysis.Options{}), "the snapshot")
			}
			_, err := fmt.Fprintln(stdout, "no trace entries: the file was recorded without history (torch.cuda.memory._record_memory_history was off) or holds a bare segment list")
			return err
		}
		devs = opts.device.shown(devs, stderr, "the trace")
		var tds []report.TraceDevice
		an := analysis.New(s, analysis.Options{})
		for _, d := range devs {
			f := report.TraceFilter{From: 0, To: -1}
			if opts.from != "" || opts.to != "" {
				r, err := an.Replay(d)
				if err != nil {
					return err
				}
				from, to := -1, len(s.Traces[d])-1 // the states the range runs between
				if opts.from != "" {
					m, _ := parseMomentFlag("--from", opts.from)
					i, err := resolveMomentFlag("--from", s, r, m)
					if err != nil {
						return err
					}
					from = i
					// The listing starts at the first entry at or after
					// the moment (for time:T, the first entry at T or later).
					if f.From, err = m.ResolveFirst(s, r); err != nil {
						return renameFlag(err, "--from")
					}
				}
				if opts.to != "" {
					m, _ := parseMomentFlag("--to", opts.to)
					i, err := resolveMomentFlag("--to", s, r, m)
					if err != nil {
						return err
					}
					to = i
					f.To = i
					if i < 0 {
						f.From, f.To = 1, 0 // before the first entry: nothing
					}
				}
				if from > to {
					return usageErrorf("--from %s comes after --to %s on device %d (entry %d after entry %d)", opts.from, opts.to, d, from, to)
				}
			}
			if opts.addr != "" {
				f.Addr, _ = parseAddr(opts.addr)
				f.HasAddr = true
			}
			if opts.focus != "" {
				f.Focus = regexp.MustCompile(opts.focus)
			}
			tds = append(tds, report.TraceDevice{Device: d, Filter: f})
		}
		if opts.json {
			return report.WriteTraceJSON(stdout, s, tds)
		}
		return report.WriteTrace(stdout, s, tds)
	})
}

// tracedHint names the devices that have a trace: "; devices with one: 0, 1".
func tracedHint(s *snapshot.Snapshot) string {
	var with []int
	for d := range s.Traces {
		if len(s.Traces[d]) > 0 {
			with = append(with, d)
		}
	}
	if len(with) == 0 {
		return "; no device has one"
	}
	return "; devices with one: " + joinInts(with)
}
