package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/monitorview"
)

// smiOptions are the flags of `snapview smi`.
type smiOptions struct {
	file     string
	stats    string
	snapshot string
	tz       string
	gpu      deviceFlag
	json     bool
}

func newSMICmd() *cobra.Command {
	opts := &smiOptions{}
	cmd := &cobra.Command{
		Use:     "smi LOG.csv",
		Short:   "read an nvidia-smi memory log: per GPU min/median/max used and growth; with --stats, the memory outside PyTorch",
		Long:    helpText("smi"),
		Example: helpText("smi.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runSMI(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.stats, "stats", "", "a memory_stats() log (JSON Lines with \"time\") to set the samples against")
	f.StringVar(&opts.snapshot, "snapshot", "", "a memory snapshot of the same run to set the samples against (its trace's reserved bytes, replayed)")
	f.StringVar(&opts.tz, "tz", "Local", "the zone nvidia-smi's timestamps were written in: a name (Europe/Berlin), UTC, Local or an offset (+02:00)")
	f.BoolVar(&opts.json, "json", false, "print JSON: per GPU the figures, and the gaps with their jumps")
	f.Var(&opts.gpu, "gpu", "with --stats or --snapshot: the nvidia-smi index of their device, when they have one (default: the same number, or the only GPU)")
	return cmd
}

func runSMI(ctx context.Context, opts *smiOptions, stdin io.Reader, out, errOut io.Writer) error {
	loc, err := parseZone(opts.tz)
	if err != nil {
		return err
	}
	name, l, err := loadSMI(opts.file, stdin, loc, errOut)
	if err != nil {
		return err
	}
	if err := checkGPUFlag(opts.gpu, opts.stats != "" || opts.snapshot != "", "--stats or --snapshot", name, l.GPUs()); err != nil {
		return err
	}
	v := &monitorview.SMIView{File: name, Rows: len(l.Samples), Loc: loc, GPUs: monitor.SummarizeSMI(l)}
	o := monitor.GapOptions{SMIName: name, SnapName: opts.snapshot, GPU: opts.gpu.n, GPUSet: opts.gpu.set}
	if opts.stats != "" {
		if opts.stats == stdinPath && opts.file == stdinPath {
			return usageErrorf("--stats -: standard input already holds the nvidia-smi log")
		}
		n, sl, err := loadStatsLog(opts.stats, stdin, errOut)
		if err != nil {
			return err
		}
		o.StatsName, o.Steps = n, monitor.AnalyzeSteps(sl)
	}
	if opts.snapshot != "" {
		if opts.snapshot == stdinPath {
			return usageErrorf("--snapshot reads a file, not standard input")
		}
		if o.Snap, err = loadSnapshot(ctx, errOut, opts.snapshot, limitsOf(ctx)); err != nil {
			return snapshotHint(opts.snapshot, err)
		}
	}
	// Without --stats or --snapshot, no gaps.
	gaps, agree, notes, err := monitor.Gaps(v.GPUs, o)
	kit.WriteNotes(errOut, notes)
	if err != nil {
		return err
	}
	v.AddGaps(gaps, agree, o.StatsName, opts.snapshot)
	return monitorview.WriteSMIAs(out, v, opts.json)
}

// checkGPUFlag checks --gpu against the nvidia-smi log name, whose GPU
// indexes are gpus, before anything else is read: --gpu without what it
// applies to (used false; with names it) is a usage error, and so is a GPU
// the log does not have (the error names the log, not the snapshot).
func checkGPUFlag(flag deviceFlag, used bool, with, name string, gpus []int) error {
	return monitor.CheckGPU(flag.n, flag.set, used, with, name, gpus)
}
