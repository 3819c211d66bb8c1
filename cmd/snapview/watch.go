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
	"github.com/snapview/snapview/internal/units"
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

// watchGiveUp is how many unreadable lines, before any readable one, make
// a log the wrong kind of file rather than a log with a bad line.
const watchGiveUp = 20

func newWatchCmd() *cobra.Command {
	opts := &watchOptions{}
	cmd := &cobra.Command{
		Use:     "watch --stats LOG.jsonl | --smi LOG.csv",
		Short:   "follow a run's memory logs as they are written, and stop it the moment memory climbs",
		Long:    helpText("watch"),
		Example: helpText("watch.examples"),
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			rules, err := parseStopRules(opts.stopOn)
			if err != nil {
				return err
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
				return usageErrorf("--tz %s: %v", opts.tz, err)
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

// parseStopRules reads --stop-on values.
func parseStopRules(vals []string) ([]monitor.StopRule, error) {
	var rules []monitor.StopRule
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			switch strings.ToLower(s) {
			case "climb":
				rules = append(rules, monitor.StopRule{Kind: monitor.StopClimb})
			case "retries", "retry":
				rules = append(rules, monitor.StopRule{Kind: monitor.StopRetries})
			case "oom", "ooms":
				rules = append(rules, monitor.StopRule{Kind: monitor.StopOOM})
			default:
				n, err := units.ParseBytes(s)
				if err != nil || n == 0 {
					return nil, usageErrorf("--stop-on %q: want climb, retries, oom or a byte limit such as 70GiB", s)
				}
				rules = append(rules, monitor.StopRule{Kind: monitor.StopLimit, Limit: n})
			}
		}
	}
	return rules, nil
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

// watchLog is one log followed.
type watchLog struct {
	name string
	fl   *monitor.Follower
	add  func(lines [][]byte, each bool) []string
}

// openWatchLog follows path ("-": stdin; a pipe or other non-regular file
// is read in the background).
func openWatchLog(path string, stdin io.Reader) (*monitor.Follower, string, error) {
	if path == stdinPath {
		return monitor.FollowReader(stdin), stdinName, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, path, err
	}
	if !st.Mode().IsRegular() {
		f, err := os.Open(path)
		if err != nil {
			return nil, path, err
		}
		return monitor.FollowReader(f), path, nil
	}
	fl, err := monitor.FollowFile(path)
	return fl, path, err
}

// openWatchLogs opens the logs --stats and --smi name (a path, or - for
// stdin) and sets their names in v; a file of another kind (a snapshot
// given as --stats) is refused at once, a pipe can only be judged by its
// lines. The logs opened before an error are returned too, for the caller
// to close.
func openWatchLogs(opts *watchOptions, w *monitor.Watch, v *monitorview.WatchView, stdin io.Reader) ([]watchLog, error) {
	var logs []watchLog
	for _, l := range []struct {
		path string
		name *string
		add  func([][]byte, bool) []string
	}{{opts.stats, &v.StatsFile, w.AddStatsLines}, {opts.smi, &v.SMIFile, w.AddSMILines}} {
		if l.path == "" {
			continue
		}
		if l.path != stdinPath {
			// A file of another kind (a snapshot given as --stats) is
			// refused at once; a pipe can only be judged by its lines.
			kind, _ := sniffInput(l.path, nil)
			want, ok := "a JSON Lines log of memory_stats()", kind == monitor.KindStatsLog || kind == monitor.KindStats
			if l.name == &v.SMIFile {
				want, ok = "an nvidia-smi CSV log", kind == monitor.KindSMI
			}
			if !ok && kind != monitor.KindUnknown {
				return logs, monitor.WrongKind(l.path, kind, want)
			}
		}
		fl, name, err := openWatchLog(l.path, stdin)
		if err != nil {
			return logs, err
		}
		*l.name = name
		logs = append(logs, watchLog{name: name, fl: fl, add: l.add})
	}
	return logs, nil
}

func runWatch(ctx context.Context, opts *watchOptions, rules []monitor.StopRule, sig syscall.Signal, loc *time.Location, stdin io.Reader, out, errOut io.Writer) error {
	w := &monitor.Watch{Rules: rules, Loc: loc, WarmupUS: opts.warmup.Microseconds()}
	v := &monitorview.WatchView{Every: opts.every.String(), W: w}
	if opts.once {
		v.Every = ""
	}
	logs, err := openWatchLogs(opts, w, v, stdin)
	for _, l := range logs {
		defer l.fl.Close()
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
		grew, ended := false, true
		for _, l := range logs {
			lines, warns, err := l.fl.Poll()
			if err != nil {
				return fmt.Errorf("%s: %w", l.name, err)
			}
			// The lines already in a file when watch starts are judged
			// as a whole, as smi and stats judge a log; later lines, and
			// a pipe's (it holds no history: its first read is whatever
			// the writer got to, more on a loaded machine), one by one
			// as they arrive, unless --once reads the pipe to its end.
			warns = append(warns, l.add(lines, !first || l.fl.IsPipe() && !opts.once)...)
			for _, m := range warns {
				fmt.Fprintf(errOut, "warning: %s: %s\n", l.name, kit.Escape(m))
				v.Warnings = append(v.Warnings, l.name+": "+m)
			}
			if len(v.Warnings) > 5 {
				v.Warnings = v.Warnings[len(v.Warnings)-5:]
			}
			// A log whose first lines are all unreadable is not the
			// log asked for (a snapshot, a CSV given as --stats).
			if n := len(w.Stats.Records); l.name == v.StatsFile && n == 0 && w.StatsRejected >= watchGiveUp {
				return fmt.Errorf("%s: not a JSON Lines log of memory_stats(): its first %d lines do not read as records", l.name, w.StatsRejected)
			}
			if n := len(w.SMI.Samples); l.name == v.SMIFile && n == 0 && w.SMIRejected >= watchGiveUp {
				return fmt.Errorf("%s: not an nvidia-smi CSV log: its first %d rows do not read as samples", l.name, w.SMIRejected)
			}
			grew = grew || len(lines) > 0
			ended = ended && (l.fl.Done() || (opts.once && !l.fl.IsPipe()))
		}
		if opts.once && !ended {
			// --once reads a pipe to its end before judging it.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		first = false
		switch {
		case tty:
			fmt.Fprint(out, "\x1b[H\x1b[2J")
			if err := monitorview.WriteWatchFrame(out, v); err != nil {
				return err
			}
		case opts.once:
			if err := monitorview.WriteWatchFrame(out, v); err != nil {
				return err
			}
		case grew:
			if line := monitorview.WatchStatusLine(v); line != "" {
				fmt.Fprintln(out, line)
			}
		}
		if w.Triggered != nil {
			msg := monitorview.TriggerText(v)
			short := "stopped: --stop-on " + monitorview.RuleText(w.Triggered.Rule) + " held"
			if opts.pid != 0 {
				if err := syscall.Kill(opts.pid, sig); err != nil {
					return fmt.Errorf("%s; sending %s to process %d: %w", msg, unix.SignalName(sig), opts.pid, err)
				}
				sent := fmt.Sprintf("; sent %s to process %d", unix.SignalName(sig), opts.pid)
				msg, short = msg+sent, short+sent
			}
			fmt.Fprintln(out, msg)
			// The reason is on stdout, under the view; stderr says why
			// the exit status is 3.
			return &exitStatus{code: watchTriggered, msg: short}
		}
		if opts.once || ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
