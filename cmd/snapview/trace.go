package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/report/traceview"
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
	host     bool
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
				for _, fl := range []string{"from", "to", "addr", "focus", "json", "device", "host"} {
					if cmd.Flags().Changed(fl) {
						return usageErrorf("--format memviz prints the whole trace as _memory_viz does: --%s does not apply", fl)
					}
				}
			}
			if opts.host && cmd.Flags().Changed("device") {
				return usageErrorf("--host lists the pinned host allocator's trace: --device does not apply")
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
	f.BoolVar(&opts.host, "host", false, "list the pinned host allocator's trace (host_traces) alone")
	addDeviceFlag(f, &opts.device, "list this CUDA device ordinal", "every device with a trace, then the host trace when no range is given")
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
			err := traceview.WriteMemvizTrace(stdout, s)
			if errors.Is(err, traceview.ErrNoDeviceTraces) {
				return &usageError{err}
			}
			return err
		}
		o := traceview.TraceOptions{FromFlag: "--from", ToFlag: "--to", FromArg: opts.from, ToArg: opts.to,
			Device: opts.device.n, DeviceSet: opts.device.set, Host: opts.host}
		for _, fl := range []struct {
			name, v string
			m       **steps.Moment
		}{{"--from", opts.from, &o.From}, {"--to", opts.to, &o.To}} {
			if fl.v != "" {
				m, _ := parseMomentFlag(fl.name, fl.v)
				*fl.m = &m
			}
		}
		if opts.addr != "" {
			o.Addr, _ = parseAddr(opts.addr)
			o.HasAddr = true
		}
		if opts.focus != "" {
			o.Focus = regexp.MustCompile(opts.focus)
		}
		devs, err := traceview.TraceDevices(s, o)
		if err != nil {
			return err
		}
		devs = opts.device.shown(devs, stderr, "the trace")
		tds, err := traceview.NewTrace(analysis.New(s, analysis.Options{}), devs, o)
		switch {
		case err != nil:
			return err
		case opts.json && len(tds) == 0:
			_, err := io.WriteString(stdout, "{\"entries\": []}\n")
			return err
		case opts.json:
			return traceview.WriteTraceJSON(stdout, s, tds)
		case len(tds) == 0:
			_, err := fmt.Fprintln(stdout, traceview.NothingToTrace)
			return err
		}
		return traceview.WriteTrace(stdout, s, tds)
	})
}

// tracedHint names the devices that have a trace (traceview.TracedHint).
func tracedHint(s *snapshot.Snapshot) string { return traceview.TracedHint(s) }
