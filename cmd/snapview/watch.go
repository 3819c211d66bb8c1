package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/internal/progress"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/monitorview"
)

// watchOptions are the flags of `snapview watch`.
type watchOptions struct {
	stats, smi string
	every      time.Duration
	stopOn     []string
	pid        int
	signal     string
	tz         string
	once       bool
	warmup     time.Duration
}

// exitStatus is an error that sets the process's exit status (watch's 3
// when a rule triggered) after its message.
type exitStatus struct {
	code int
	msg  string
}

func (e *exitStatus) Error() string { return e.msg }

// watchTriggered is watch's exit status when a --stop-on rule held.
const watchTriggered = 3

func newWatchCmd() *cobra.Command {
	opts := &watchOptions{}
	cmd := &cobra.Command{
		Use:     "watch --stats LOG.jsonl | --smi LOG.csv",
		Short:   "follow a run's memory logs as they are written, and stop it the moment memory climbs",
		Long:    helpText("watch"),
		Example: helpText("watch.examples"),
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			rules, err := monitor.ParseStopRules(opts.stopOn)
			if err != nil {
				return &usageError{fmt.Errorf("--stop-on %w", err)}
			}
			if opts.stats == "" && opts.smi == "" {
				return usageErrorf("nothing to watch: give --stats LOG.jsonl, --smi LOG.csv or both")
			}
			if opts.stats == stdinPath && opts.smi == stdinPath {
				return usageErrorf("--stats and --smi cannot both read standard input")
			}
			if opts.every <= 0 {
				return usageErrorf("--every must be above 0, got %v", opts.every)
			}
			sig, err := parseSignal(opts.signal)
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("signal") && opts.pid == 0 {
				return usageErrorf("--signal needs --pid: the process to send it to")
			}
			loc, err := parseZone(opts.tz)
			if err != nil {
				return err
			}
			return runWatch(cmd.Context(), opts, rules, sig, loc, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.stats, "stats", "", "a JSON Lines log of memory_stats() to follow (- for standard input)")
	f.StringVar(&opts.smi, "smi", "", "an nvidia-smi CSV log to follow (- for standard input)")
	f.DurationVar(&opts.every, "every", 2*time.Second, "how often the logs are read and the view redrawn")
	f.StringArrayVar(&opts.stopOn, "stop-on", nil, "climb, retries, oom or a LIMIT in bytes (repeatable, or comma-separated)")
	f.IntVar(&opts.pid, "pid", 0, "the training process to signal when a rule holds")
	f.StringVar(&opts.signal, "signal", "SIGTERM", "the signal --pid gets: SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGKILL, …")
	f.StringVar(&opts.tz, "tz", "Local", "the zone nvidia-smi's timestamps were written in: a name, UTC, Local or an offset")
	f.BoolVar(&opts.once, "once", false, "read the logs once, judge them, print the view and exit")
	f.DurationVar(&opts.warmup, "warmup", 30*time.Second, "start-up time in which nvidia-smi's used memory may climb: its climb must start this long after the log's first sample")
	return cmd
}

// parseSignal reads a signal name (SIGUSR1, USR1) or number.
func parseSignal(s string) (syscall.Signal, error) {
	name := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err == nil && n > 0 && n < 65 {
		return syscall.Signal(n), nil
	}
	return 0, usageErrorf("--signal %q: want a signal name such as SIGTERM or SIGUSR1, or its number", s)
}

// runWatch reads the logs every opts.every (monitor.Watch.Poll), redraws
// the view on a terminal (a status line otherwise), and when a rule holds
// prints why, signals --pid and returns the exit status 3.
func runWatch(ctx context.Context, opts *watchOptions, rules []monitor.StopRule, sig syscall.Signal, loc *time.Location, stdin io.Reader, out, errOut io.Writer) error {
	w := &monitor.Watch{Rules: rules, Loc: loc, WarmupUS: opts.warmup.Microseconds()}
	v := &monitorview.WatchView{Every: opts.every.String(), W: w}
	if opts.once {
		v.Every = ""
	}
	logs, err := monitor.OpenWatchLogs(opts.stats, opts.smi, stdin)
	for _, l := range logs {
		defer l.Close()
		v.AddLog(l)
	}
	if err != nil {
		return err
	}
	tty := false
	if f, ok := out.(*os.File); ok {
		tty = progress.IsTerminal(f)
	}
	first := true
	tick := time.NewTicker(opts.every)
	defer tick.Stop()
	for {
		p, err := w.Poll(logs, first, opts.once)
		for _, m := range p.Warnings {
			fmt.Fprintf(errOut, "warning: %s: %s\n", m.Log, kit.Escape(m.Text))
			v.AddWarning(m.Log + ": " + m.Text)
		}
		if err != nil {
			return err
		}
		if opts.once && !p.Ended {
			// --once reads a pipe to its end before judging it.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		first = false
		if err := monitorview.WriteWatch(out, v, tty, p.Grew); err != nil {
			return err
		}
		if w.Triggered != nil {
			return stopWatch(opts, v, sig, out)
		}
		if opts.once || p.Ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopWatch prints why a rule held, sends --pid its signal and returns
// the exit status 3.
func stopWatch(opts *watchOptions, v *monitorview.WatchView, sig syscall.Signal, out io.Writer) error {
	msg, short := monitorview.StopText(v)
	if opts.pid != 0 {
		if err := syscall.Kill(opts.pid, sig); err != nil {
			return fmt.Errorf("%s; sending %s to process %d: %w", msg, unix.SignalName(sig), opts.pid, err)
		}
		sent := fmt.Sprintf("; sent %s to process %d", unix.SignalName(sig), opts.pid)
		msg, short = msg+sent, short+sent
	}
	fmt.Fprintln(out, msg)
	// The reason is on stdout, under the view; stderr says why the exit
	// status is 3.
	return &exitStatus{code: watchTriggered, msg: short}
}
