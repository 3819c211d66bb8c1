package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/report"
)

// smiOptions are the flags of `snapview smi`.
type smiOptions struct {
	file  string
	stats string
	tz    string
	gpu   deviceFlag
	json  bool
}

func newSMICmd() *cobra.Command {
	opts := &smiOptions{}
	cmd := &cobra.Command{
		Use:   "smi LOG.csv",
		Short: "read an nvidia-smi memory log: per GPU min/median/max used and growth; with --stats, the memory outside PyTorch",
		Long: `smi reads the CSV nvidia-smi writes with

    nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv -l 1 -f smi.csv

(-lms 100 for a sample every 100 ms; --format=csv,noheader,nounits is read
too; more columns may follow, and with a header they may come in any order).
Several GPUs interleave, one row each per sample.

For each GPU it prints the range of memory.used (min, median, max and when),
how much it grew from the first sample to the last, and whether it keeps
climbing and since when (as snapview stats judges steps).

nvidia-smi counts all memory in use on a GPU: PyTorch's reserved bytes, but
also the CUDA context, communication buffers, other libraries' cudaMalloc
and other processes. With --stats LOG.jsonl (a memory_stats() log with
"time" fields, see snapview stats) it sets each sample against PyTorch's
reserved bytes at that moment, and prints the gap, its lasting jumps (with
the step they fall in) and what it is made of. snapview report SNAPSHOT
--smi LOG.csv draws the same against a snapshot's timeline.

nvidia-smi writes its timestamps in the local time of the machine it ran
on, with no zone: --tz names that zone (default: this machine's, $TZ).

A row that cannot be read is an error naming its line number (exit 1);
rows whose memory is [N/A], and a last row cut short, are left out with a
warning.`,
		Example: `  snapview smi smi.csv
  snapview smi --tz Europe/Berlin --stats train_memory.jsonl smi.csv
  snapview smi --json smi.csv | jq '.gpus[] | {gpu, max_used_bytes}'`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			return runSMI(opts, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.stats, "stats", "", "a memory_stats() log (JSON Lines with \"time\") to set the samples against")
	f.StringVar(&opts.tz, "tz", "Local", "the zone nvidia-smi's timestamps were written in: a name (Europe/Berlin), UTC, Local or an offset (+02:00)")
	f.BoolVar(&opts.json, "json", false, "print JSON: per GPU the figures, and the gaps with their jumps")
	f.Var(&opts.gpu, "gpu", "with --stats: the nvidia-smi index of the log's device (default: the same number, or the only GPU)")
	return cmd
}

func runSMI(opts *smiOptions, stdin io.Reader, out, errOut io.Writer) error {
	loc, err := parseZone(opts.tz)
	if err != nil {
		return err
	}
	name, l, err := loadSMI(opts.file, stdin, loc, errOut)
	if err != nil {
		return err
	}
	v := &report.SMIView{File: name, Rows: len(l.Samples), Loc: loc, GPUs: monitor.SummarizeSMI(l)}
	if opts.stats != "" {
		if opts.stats == stdinPath && opts.file == stdinPath {
			return usageErrorf("--stats -: standard input already holds the nvidia-smi log")
		}
		sname, sl, err := loadStatsLog(opts.stats, stdin, errOut)
		if err != nil {
			return err
		}
		devs := monitor.AnalyzeSteps(sl)
		for _, d := range devs {
			gpu, ok, err := smiGPUFor(l.GPUs(), d.Device, opts.gpu, len(devs) > 1)
			if err != nil {
				return err
			}
			if !ok {
				fmt.Fprintf(errOut, "warning: %s: no GPU %d in the nvidia-smi log for device %d\n", sname, d.Device, d.Device)
				continue
			}
			series := d.ReservedSeries()
			if len(series.TimesUS) == 0 {
				return fmt.Errorf("%s: no record has a \"time\": nothing to set the nvidia-smi samples against", sname)
			}
			g := monitor.FindGap(gpuSeries(v.GPUs, gpu), series)
			v.Gaps = append(v.Gaps, report.GapView{GPU: gpu, Device: d.Device,
				Against: "reserved_bytes.all.current of " + sname, Gap: g, StepAt: report.StepAt(&d, loc)})
		}
	}
	if opts.json {
		return report.WriteSMIJSON(out, v)
	}
	return report.WriteSMIText(out, v)
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

// gpuSeries returns the samples of one GPU, in time order.
func gpuSeries(gs []monitor.GPUSummary, gpu int) []monitor.SMISample {
	for _, g := range gs {
		if g.GPU == gpu {
			return g.Series
		}
	}
	return nil
}
