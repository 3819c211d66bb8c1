package main

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/check"
	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/internal/atomicfile"
	"github.com/snapview/snapview/report/kit"
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
			rules, err := check.Rules(check.Flags{Max: opts.max, Growth: opts.growth, NoOOM: opts.noOOM, NoRetries: opts.noRetries,
				NoLeak: opts.noLeak, Baseline: opts.baseline != ""})
			if err != nil {
				return &usageError{err} // a malformed rule names its flag
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

func runCheck(ctx context.Context, opts *checkOptions, rules []check.Rule, stdin io.Reader, out, errOut io.Writer) error {
	run, err := loadCheckInputs(ctx, opts.file, opts.device, opts.noLeak, stdin, errOut)
	if err != nil {
		return err
	}
	var base *check.Inputs
	if opts.baseline != "" {
		if opts.baseline == stdinPath && opts.file == stdinPath {
			return usageErrorf("FILE and --baseline cannot both be standard input")
		}
		if base, err = loadCheckInputs(ctx, opts.baseline, opts.device, false, stdin, errOut); err != nil {
			return err
		}
	}
	v := &verdictview.CheckView{File: run.Name, Strict: opts.strict}
	if base != nil {
		v.Baseline = base.Name
	}
	var notes []analysis.Note
	v.Results, notes, err = check.RunAll(rules, run, base)
	kit.WriteNotes(errOut, notes)
	if err != nil {
		return err
	}
	if opts.junit != "" {
		if err := atomicfile.Write(ctx, opts.junit, func(w io.Writer) error { return verdictview.WriteCheckJUnit(w, v) }); err != nil {
			return err
		}
	}
	if err := verdictview.WriteCheckAs(out, v, opts.json); err != nil {
		return err
	}
	if msg := verdictview.CheckFailure(v); msg != "" {
		return errors.New(msg)
	}
	return nil
}

// loadCheckInputs reads the figures of FILE's devices: a snapshot's
// (check.SnapshotInputs, its leak verdicts when leaks is set), or a
// memory_stats() dump's or log's (check.LogInputs).
func loadCheckInputs(ctx context.Context, path string, dev deviceFlag, leaks bool, stdin io.Reader, errOut io.Writer) (*check.Inputs, error) {
	kind, in := sniffInput(path, stdin)
	switch kind {
	case monitor.KindSMI:
		return nil, monitor.WrongKind(path, kind, "a snapshot or memory_stats() dump")
	case monitor.KindStats, monitor.KindStatsLog:
		name, l, err := loadStatsLog(path, in, errOut)
		if err != nil {
			return nil, err
		}
		steps, err := pickDevices(dev, name, monitor.AnalyzeSteps(l), func(d monitor.StepsDevice) int { return d.Device })
		if err != nil {
			return nil, err
		}
		return check.LogInputs(name, steps), nil
	}
	var run *check.Inputs
	err := withSnapshotCtx(ctx, in, errOut, path, func(s *snapshot.Snapshot, src source) error {
		printWarnings(errOut, s.Warnings)
		devices, err := dev.pick(s)
		if err != nil {
			return err
		}
		var notes []analysis.Note
		run, notes, err = check.SnapshotInputs(s, src.name, check.SnapshotOptions{Devices: devices, Picked: dev.set, Leaks: leaks, Where: stacks.Where})
		kit.WriteNotes(errOut, notes)
		return err
	})
	return run, err
}
