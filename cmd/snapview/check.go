package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/check"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/atomicfile"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// checkOptions are the flags of `snapview check`.
type checkOptions struct {
	file, baseline string
	device         deviceFlag
	max, growth    []string
	noLeak, noOOM  bool
	noRetries      bool
	strict, json   bool
	junit          string
}

func newCheckCmd() *cobra.Command {
	opts := &checkOptions{}
	cmd := &cobra.Command{
		Use:     "check FILE",
		Short:   "gate a run on its memory figures for CI: exit 0 when every check holds, 1 when one fails",
		Long:    helpText("check"),
		Example: helpText("check.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			rules, err := opts.rules()
			if err != nil {
				return err
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runCheck(cmd.Context(), opts, rules, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.baseline, "baseline", "", "a run to compare with: a snapshot, memory_stats() dump or log")
	addDeviceFlag(f, &opts.device, "check only this CUDA device ordinal", "every device in the file")
	f.StringArrayVar(&opts.max, "max", nil, "NAME=LIMIT: the figure at most LIMIT (bytes, a count, or PCT% of the baseline)")
	f.StringArrayVar(&opts.growth, "max-growth", nil, "NAME=PCT: the figure at most PCT percent above the baseline's")
	f.BoolVar(&opts.noLeak, "no-leak", false, "fail when a stack is judged a leak (snapshots)")
	f.BoolVar(&opts.noOOM, "no-oom", false, "fail when the run had an OOM")
	f.BoolVar(&opts.noRetries, "no-retries", false, "fail when the run had a cudaMalloc retry")
	f.BoolVar(&opts.strict, "strict", false, "a figure the file cannot tell (unknown, lower bound) fails its check")
	f.BoolVar(&opts.json, "json", false, "print JSON: every check with its figures")
	f.StringVar(&opts.junit, "junit", "", "also write the checks as a JUnit XML report to this file")
	return cmd
}

// rules turns the flags into check rules; a malformed one is a usage
// error naming its flag.
func (o *checkOptions) rules() ([]check.Rule, error) {
	var rules []check.Rule
	for _, m := range o.max {
		r, err := check.ParseMax(m)
		if err != nil {
			return nil, &usageError{err}
		}
		rules = append(rules, r)
	}
	for _, g := range o.growth {
		r, err := check.ParseMaxGrowth(g)
		if err != nil {
			return nil, &usageError{err}
		}
		rules = append(rules, r)
	}
	if o.noOOM {
		rules = append(rules, check.Rule{Kind: check.NoOOM})
	}
	if o.noRetries {
		rules = append(rules, check.Rule{Kind: check.NoRetries})
	}
	if o.noLeak {
		rules = append(rules, check.Rule{Kind: check.NoLeak, Name: "leaks"})
	}
	if len(rules) == 0 {
		return nil, usageErrorf("no check given: say --max, --max-growth, --no-oom, --no-retries or --no-leak")
	}
	for _, r := range rules {
		if (r.Kind == check.MaxGrowth || r.IsPercent) && o.baseline == "" {
			return nil, usageErrorf("%s: a limit relative to the baseline needs --baseline BASE", r.Name)
		}
	}
	return rules, nil
}

// checkRun is one file's inputs, by device.
type checkRun struct {
	name    string
	devices []check.Input
	traces  map[int][]snapshot.TraceEntry // exact from-start traces, for SameRequests
}

func runCheck(ctx context.Context, opts *checkOptions, rules []check.Rule, stdin io.Reader, out, errOut io.Writer) error {
	needLeaks := opts.noLeak
	run, err := loadCheckRun(ctx, opts.file, opts.device, needLeaks, stdin, errOut)
	if err != nil {
		return err
	}
	var base *checkRun
	if opts.baseline != "" {
		if opts.baseline == stdinPath && opts.file == stdinPath {
			return usageErrorf("FILE and --baseline cannot both be standard input")
		}
		if base, err = loadCheckRun(ctx, opts.baseline, opts.device, false, stdin, errOut); err != nil {
			return err
		}
	}
	v := &verdictview.CheckView{File: run.name, Strict: opts.strict}
	if base != nil {
		v.Baseline = base.name
	}
	pairs, err := checkPairs(run, base)
	if err != nil {
		return err
	}
	for i, in := range run.devices {
		var b *check.Baseline
		if base != nil {
			bi := pairs[i]
			if in.Device != base.devices[bi].Device {
				fmt.Fprintf(errOut, "note: device %d of %s is checked against device %d of %s: each file used one device\n",
					in.Device, run.name, base.devices[bi].Device, base.name)
			}
			b = &check.Baseline{Figures: base.devices[bi].Figures}
			ta, okA := run.traces[in.Device]
			tb, okB := base.traces[base.devices[bi].Device]
			if okA && okB {
				b.Known, b.SameRequests = true, check.SameRequests(ta, tb)
			}
		}
		res, err := check.Run(rules, in, b)
		if err != nil {
			return usageErrorf("%v", err)
		}
		v.Results = append(v.Results, res...)
	}
	if opts.junit != "" {
		if err := atomicfile.Write(ctx, opts.junit, func(w io.Writer) error { return verdictview.WriteCheckJUnit(w, v) }); err != nil {
			return err
		}
	}
	if opts.json {
		err = verdictview.WriteCheckJSON(out, v)
	} else {
		err = verdictview.WriteCheckText(out, v)
	}
	if err != nil {
		return err
	}
	if check.Failed(v.Results, opts.strict) {
		_, fail, unknown := verdictview.CheckCounts(v)
		if opts.strict {
			fail += unknown
		}
		return fmt.Errorf("%s: %d of %s failed", run.name, fail, units.Plural(len(v.Results), "check"))
	}
	return nil
}

// checkPairs returns, for each device of run, the index of its baseline
// device: the same ordinal, or, when each file used a single device (the
// ranks of a distributed run, each on its own GPU), that one. nil without
// a baseline; a usage error naming both files' devices otherwise.
func checkPairs(run, base *checkRun) ([]int, error) {
	if base == nil {
		return nil, nil
	}
	if len(run.devices) == 1 && len(base.devices) == 1 {
		return []int{0}, nil
	}
	ords := func(r *checkRun) []int {
		var out []int
		for _, d := range r.devices {
			out = append(out, d.Device)
		}
		return out
	}
	pairs := make([]int, len(run.devices))
	for i, in := range run.devices {
		pairs[i] = slices.IndexFunc(base.devices, func(d check.Input) bool { return d.Device == in.Device })
		if pairs[i] < 0 {
			return nil, usageErrorf("--baseline %s has no device %d (its devices: %s; %s's: %s): give --device N",
				base.name, in.Device, joinInts(ords(base)), run.name, joinInts(ords(run)))
		}
	}
	return pairs, nil
}

// loadCheckRun reads the figures of FILE's devices: a snapshot's (the
// figures summary prints, and its leak verdicts when leaks is set), or a
// memory_stats() dump's or log's (its last record per device; all exact).
func loadCheckRun(ctx context.Context, path string, dev deviceFlag, leaks bool, stdin io.Reader, errOut io.Writer) (*checkRun, error) {
	kind, in := sniffInput(path, stdin)
	run := &checkRun{traces: map[int][]snapshot.TraceEntry{}}
	switch kind {
	case monitor.KindSMI:
		return nil, monitor.WrongKind(path, kind, "a snapshot or memory_stats() dump")
	case monitor.KindStats, monitor.KindStatsLog:
		name, l, err := loadStatsLog(path, in, errOut)
		if err != nil {
			return nil, err
		}
		run.name = name
		steps, err := pickDevices(dev, name, monitor.AnalyzeSteps(l), func(d monitor.StepsDevice) int { return d.Device })
		if err != nil {
			return nil, err
		}
		for _, d := range steps {
			st := d.Records[len(d.Records)-1].Stats
			run.devices = append(run.devices, check.Input{Device: d.Device, Figures: check.FiguresOf(st),
				LeaksWhy: "a memory_stats() log has no allocation stacks: take a snapshot to judge leaks"})
		}
		return run, nil
	}
	err := withSnapshotCtx(ctx, in, errOut, path, func(s *snapshot.Snapshot, src source) error {
		run.name = src.name
		printWarnings(errOut, s.Warnings)
		devices, err := dev.pick(s)
		if err != nil {
			return err
		}
		if !dev.set {
			// A distributed process's file lists the other ranks'
			// devices with a lone snapshot entry: nothing to check.
			for _, d := range s.IdleDevices() {
				devices = slices.DeleteFunc(devices, func(x int) bool { return x == d })
			}
		}
		// One replay per device: the figures, and the leaks when asked for
		// (a Full replay's figures are a StatsOnly replay's).
		mode := replay.StatsOnly
		if leaks {
			mode = replay.Full
		}
		an := analysis.New(s, analysis.Options{Mode: mode})
		for _, d := range devices {
			st, notes := an.Stats(d)
			printWarnings(errOut, notes)
			ci := check.Input{Device: d, Figures: check.FiguresOf(st)}
			if st.Known.History == stats.Exact && hasTrace(s, d) {
				run.traces[d] = s.Traces[d]
			}
			if leaks {
				if err := judgeLeaks(an, d, &ci); err != nil {
					return err
				}
			}
			an.Forget(d) // one device at a time
			run.devices = append(run.devices, ci)
		}
		return nil
	})
	return run, err
}

// judgeLeaks fills in's leak verdicts as snapview leaks gives them by
// default: the stacks whose verdict is "likely leak" (growing every step,
// never freed; or freed only in bursts, as reference cycles left to gc).
func judgeLeaks(an *analysis.File, d int, in *check.Input) error {
	s := an.Snap
	if !an.HasTrace(d) {
		in.LeaksWhy = "no trace: leaks cannot be judged (record with _record_memory_history)"
		return nil
	}
	r, err := an.Replay(d)
	if err != nil {
		in.LeaksWhy = err.Error()
		return nil
	}
	rep, err := an.Leaks(d, leaks.DefaultLeakOptions(r))
	if err != nil {
		return err
	}
	in.LeaksKnown = true
	for _, g := range rep.Groups {
		if k := g.Verdict.Kind; k == leaks.VerdictLeak || k == leaks.VerdictSawtooth {
			in.Leaks = append(in.Leaks, check.Leak{Where: stacks.Where(s, g.Stack), Verdict: g.Verdict.String(), Bytes: g.Bytes})
		}
	}
	return nil
}
