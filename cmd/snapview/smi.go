package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/report/monitorview"
	"github.com/snapview/snapview/snapshot"
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
	var steps []monitor.StepsDevice
	var sname string
	if opts.stats != "" {
		if opts.stats == stdinPath && opts.file == stdinPath {
			return usageErrorf("--stats -: standard input already holds the nvidia-smi log")
		}
		n, sl, err := loadStatsLog(opts.stats, stdin, errOut)
		if err != nil {
			return err
		}
		sname, steps = n, monitor.AnalyzeSteps(sl)
	}
	stepsOf := func(dev int) *monitor.StepsDevice {
		for i := range steps {
			if steps[i].Device == dev {
				return &steps[i]
			}
		}
		return nil
	}
	// gap adds the gap of device dev against reserved, unless the log has
	// no GPU for it.
	gap := func(dev int, several bool, against string, reserved monitor.Series) error {
		gpu, ok, err := smiGPUFor(l.GPUs(), dev, opts.gpu, several)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(errOut, "warning: %s: no GPU %d for device %d\n", name, dev, dev)
			return nil
		}
		gv := monitorview.GapView{GPU: gpu, Device: dev, Against: against, Gap: monitor.FindGap(gpuSeries(v.GPUs, gpu), reserved)}
		if d := stepsOf(dev); d != nil {
			gv.StepAt = monitorview.StepAt(d, loc)
		}
		v.Gaps = append(v.Gaps, gv)
		return nil
	}
	if opts.snapshot != "" {
		if opts.snapshot == stdinPath {
			return usageErrorf("--snapshot reads a file, not standard input")
		}
		s, err := loadSnapshot(ctx, errOut, opts.snapshot, limitsOf(ctx))
		if err != nil {
			return snapshotHint(opts.snapshot, err)
		}
		devs := s.Devices()
		an := analysis.New(s, analysis.Options{})
		for _, dev := range devs {
			var trace []snapshot.TraceEntry
			if dev < len(s.Traces) {
				trace = s.Traces[dev]
			}
			r, err := an.Replay(dev)
			if err != nil {
				return inFile(opts.snapshot, err)
			}
			allocated, reserved := monitor.TraceSeries(trace, r)
			if reserved.Span() == 0 {
				fmt.Fprintf(errOut, "warning: %s: the trace of device %d covers no time (entries: %d, none or one with a time_us): nothing to set the nvidia-smi samples against\n",
					opts.snapshot, dev, len(trace))
				continue
			}
			if err := gap(dev, len(devs) > 1, "replayed from the trace of "+opts.snapshot, reserved); err != nil {
				return err
			}
			if d := stepsOf(dev); d != nil {
				v.Notes = append(v.Notes, monitorview.AgreeText(d, monitor.Agree(d, allocated, reserved), sname, opts.snapshot))
			}
		}
	} else {
		for _, d := range steps {
			series := d.ReservedSeries()
			if len(series.TimesUS) == 0 {
				return fmt.Errorf("%s: no record has a \"time\": nothing to set the nvidia-smi samples against", sname)
			}
			if err := gap(d.Device, len(steps) > 1, "reserved_bytes.all.current of "+sname, series); err != nil {
				return err
			}
		}
	}
	if opts.json {
		return monitorview.WriteSMIJSON(out, v)
	}
	return monitorview.WriteSMIText(out, v)
}

// smiGPUFor picks among gpus, the indexes of an nvidia-smi log, the GPU of
// a CUDA device. When one device is looked at (several false): --gpu when
// given, else the GPU of the same index, else the only GPU of the log; a
// log with several GPUs and none of that index is a usage error. With
// several devices, each gets the GPU of its index, or none (ok false): an
// index may differ from the CUDA ordinal (CUDA_VISIBLE_DEVICES), and
// --gpu, which says it, needs one device.
func smiGPUFor(gpus []int, device int, flag deviceFlag, several bool) (gpu int, ok bool, err error) {
	switch {
	case flag.set && several:
		return 0, false, usageErrorf("--gpu %d names the GPU of one device: give --device too", flag.n)
	case flag.set:
		if !slices.Contains(gpus, flag.n) {
			return 0, false, usageErrorf("--gpu %d: the nvidia-smi log has no GPU %d (GPUs: %s)", flag.n, flag.n, joinInts(gpus))
		}
		return flag.n, true, nil
	case slices.Contains(gpus, device):
		return device, true, nil
	case several:
		return 0, false, nil
	case len(gpus) == 1:
		return gpus[0], true, nil
	}
	return 0, false, usageErrorf("device %d: the nvidia-smi log has no GPU %d (GPUs: %s); say which with --gpu", device, device, joinInts(gpus))
}

// checkGPUFlag checks --gpu against the nvidia-smi log name, whose GPU
// indexes are gpus, before anything else is read: --gpu without what it
// applies to (used false; with names it) is a usage error, and so is a GPU
// the log does not have (the error names the log, not the snapshot).
func checkGPUFlag(flag deviceFlag, used bool, with, name string, gpus []int) error {
	switch {
	case !flag.set:
		return nil
	case !used:
		return usageErrorf("--gpu %d names the nvidia-smi GPU to set against %s: give one", flag.n, with)
	case !slices.Contains(gpus, flag.n):
		return usageErrorf("--gpu %d: %s: the nvidia-smi log has no GPU %d (GPUs: %s)", flag.n, name, flag.n, joinInts(gpus))
	}
	return nil
}

// gpuSeries returns the samples of one GPU, in time order.
func gpuSeries(gs []monitor.GPUSummary, gpu int) []monitor.SMISample {
	for _, g := range gs {
		if g.GPU == gpu {
			return g.Series
		}
	}
	return nil
}
