package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/report/monitorview"
)

// statsOptions are the flags of `snapview stats`.
type statsOptions struct {
	file   string
	device deviceFlag
	rows   int
	json   bool
}

func newStatsCmd() *cobra.Command {
	opts := &statsOptions{}
	cmd := &cobra.Command{
		Use:   "stats LOG",
		Short: "read a log of memory_stats() dumps, one per step: per-step table, and whether memory keeps climbing",
		Long: `stats reads a JSON Lines log of torch.cuda.memory_stats() dumps, one JSON
object per line, as a training loop writes it:

    rec = {"step": step, "time": time.time()}
    rec.update(torch.cuda.memory_stats())
    log.write(json.dumps(rec) + "\n")

"step" (an integer) and "time" (seconds since the epoch, or an RFC 3339
string) are optional; the figures may also sit under a "memory_stats" key,
beside a "device" ordinal (default 0). Other keys (a loss, a learning rate)
are ignored. A single json.dump(torch.cuda.memory_stats()) file reads as a
log of one record.

For each device it prints one row per record: allocated and reserved bytes
(allocated_bytes.all.current, reserved_bytes.all.current), their peaks (since
the start, or per step when the loop calls reset_peak_memory_stats()), and
the cudaMalloc retries and OOMs so far. Then the verdicts:

  - whether allocated and reserved memory keep climbing, and the step where
    the climb started: the figures keep reaching new highs up to the end of
    the log, no two new highs further apart than four median steps (or a
    fifth of the log), with the warm-up's big first jumps left out. The
    advice in the field is to stop a run whose memory keeps climbing: look
    for the leak with snapview leaks on a snapshot of it;
  - from which step cudaMalloc retries (num_alloc_retries > 0: the allocator
    had to free its cache and try again; the run is near an OOM, and slow)
    and OOMs appeared.

A line that cannot be read is an error naming its line number (exit 1); a
last line cut short while the log was written is left out with a warning.`,
		Example: `  snapview stats train_memory.jsonl
  snapview stats --rows 0 train_memory.jsonl     # every record
  snapview stats --json train_memory.jsonl | jq '.devices[0].allocated_climb'
  snapview report snap.pickle --stats train_memory.jsonl --smi smi.csv`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if opts.rows < 0 {
				return usageErrorf("--rows must be 0 (all) or more, got %d", opts.rows)
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runStats(opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	addDeviceFlag(f, &opts.device, "show only this CUDA device ordinal", "every device in the log")
	f.IntVar(&opts.rows, "rows", 40, "most records shown per device, spread over the log, those the verdicts point at included (0: all)")
	f.BoolVar(&opts.json, "json", false, "print JSON: every record and the verdicts")
	return cmd
}

func runStats(opts *statsOptions, stdin io.Reader, out, errOut io.Writer) error {
	name, l, err := loadStatsLog(opts.file, stdin, errOut)
	if err != nil {
		return err
	}
	devs, err := pickDevices(opts.device, name, monitor.AnalyzeSteps(l), func(d monitor.StepsDevice) int { return d.Device })
	if err != nil {
		return err
	}
	v := &monitorview.StepsView{File: name, Devices: devs, Rows: opts.rows}
	if opts.json {
		return monitorview.WriteStepsJSON(out, v)
	}
	return monitorview.WriteStepsText(out, v)
}
