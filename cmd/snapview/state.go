package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/explain"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/verdictview"
	"github.com/snapview/snapview/snapshot"
)

// stateOptions are the flags of `snapview state`.
type stateOptions struct {
	file   string
	at     string
	atSet  bool // --at was given: peak is not the default
	device deviceFlag
	json   bool
	top    int
	frames int
}

func newStateCmd() *cobra.Command {
	opts := &stateOptions{}
	cmd := &cobra.Command{
		Use:     "state FILE",
		Short:   "show the allocator state at the peak, at an OOM, at the end, or at any trace entry",
		Long:    helpText("state"),
		Example: helpText("state.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			opts.atSet = cmd.Flags().Changed("at")
			if _, err := parseMoment(opts.at); err != nil {
				return err
			}
			if opts.top < 1 {
				return usageErrorf("--top must be at least 1, got %d", opts.top)
			}
			if opts.frames < 0 {
				return usageErrorf("--frames must be 0 (all) or more, got %d", opts.frames)
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runState(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.at, "at", "peak", "the moment: peak, oom, oom:K, end, entry:N, time:T or step:K")
	addDeviceFlag(f, &opts.device, "show this CUDA device ordinal", "for --at oom the first device with one, else the first with a trace")
	f.BoolVar(&opts.json, "json", false, "write JSON (every block, every stack) instead of text")
	f.IntVar(&opts.top, "top", 10, "number of largest allocations and of stacks listed (at least 1)")
	f.IntVar(&opts.frames, "frames", 12, "most frame lines printed per stack, after folding torch, standard-library and C++ frames (0: all)")
	return cmd
}

// stateDevice returns the device state shows (-1 when the snapshot has
// none) and, when it chose one of several, a note saying which and why:
// the one --device names, else analysis.ShownDevice's.
func stateDevice(s *snapshot.Snapshot, f *deviceFlag, at steps.Moment) (dev int, note string, err error) {
	return f.choice().One(s, at)
}

// writeNothing writes the line state and leaks print when what (the
// snapshot, device N) holds nothing: not an error. A file that holds
// pinned host memory only (record_cuda=False) shows that instead.
func writeNothing(w io.Writer, f *analysis.File, what string) error {
	if what == "the snapshot" && hasHost(f.Snap) {
		if _, err := fmt.Fprintf(w, "no device memory to show: the file holds pinned host memory only (_record_memory_history(record_pinned_host_memory=True, record_cuda=False))\n\n"); err != nil {
			return err
		}
		return hostview.Write(w, f.Host())
	}
	_, err := fmt.Fprintf(w, "nothing to show: %s holds no segments and no trace entries (recording was off, or nothing was allocated)\n", what)
	return err
}

// hasHost says whether s holds pinned host memory (host_traces or
// host_segments entries).
func hasHost(s *snapshot.Snapshot) bool {
	return len(s.HostTraces) > 0 || len(s.HostSegments) > 0
}

// writeHostAfter writes the file's pinned host memory (the section
// summary shows, from f.Host) after a text view of device memory, when the
// file holds some.
func writeHostAfter(w io.Writer, f *analysis.File) error {
	if !hasHost(f.Snap) {
		return nil
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return hostview.Write(w, f.Host())
}

// hostJSON is f's pinned host memory as state and leaks --json give it
// (the key "host", summary --json's figures: present whenever the file
// has host_segments or host_traces, empty or not), nil when it has
// neither.
func hostJSON(f *analysis.File) *hostview.JSON {
	return hostview.NewJSON(f.Host())
}

func runState(ctx context.Context, opts *stateOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	at, err := parseMoment(opts.at)
	if err != nil {
		return err
	}
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, _ source) error {
		return showState(ctx, opts, at, s, stdout, stderr)
	})
}

// showState prints the state of s at the moment at.
func showState(ctx context.Context, opts *stateOptions, at steps.Moment, s *snapshot.Snapshot, stdout, stderr io.Writer) error {
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", kit.Escape(w))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dev, note, err := stateDevice(s, &opts.device, at)
	if err != nil {
		return err
	}
	an := analysis.New(s, analysis.Options{})
	if dev < 0 || !slices.Contains(s.Devices(), dev) {
		if opts.json {
			if dev < 0 && an.Host().Present {
				return kit.WriteJSON(stdout, struct {
					Host *hostview.JSON `json:"host"`
				}{hostJSON(an)})
			}
			_, err := io.WriteString(stdout, "{}\n")
			return err
		}
		what := "the snapshot"
		if dev >= 0 {
			what = fmt.Sprintf("device %d", dev)
		}
		return writeNothing(stdout, an, what)
	}
	if note != "" {
		fmt.Fprintf(stderr, "note: %s\n", kit.Escape(note))
	}
	label := opts.at
	if !opts.atSet && !hasTrace(s, dev) {
		fmt.Fprintf(stderr, "note: device %d has no trace entries, so no peak: showing the state the file holds (--at end)\n", dev)
		at, label = steps.Moment{Kind: steps.MomentEnd}, "end"
	}
	r, err := an.Replay(dev)
	if err != nil {
		return err
	}
	if !r.Check.Equal {
		warnEndState(stderr, "", []int{dev}, "the state", r.Check.Differences)
	}
	i, err := resolveMoment(s, r, at)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st, err := r.StateAt(i)
	if err != nil {
		return err
	}
	v := report.NewStateView(s, r, st, label, report.StateOptions{Top: opts.top, Frames: opts.frames})
	v.PrivatePools = an.Pools(dev)
	v.Host = hostJSON(an)
	if st.Entry != nil && st.Entry.Action == snapshot.ActionOOM {
		// explain's findings open the view, from the same analysis; the
		// what-if verdict they used (the cap inferred from the OOM, as
		// whatif does without --limit) is shown under the OOM.
		es, err := an.Explain([]int{dev}, explain.Options{})
		if err != nil {
			return err
		}
		e := es[0]
		v.Whatif = e.Whatif
		v.Explain = &verdictview.NewExplainView(s, []*explain.Device{e}).Devices[0]
	}
	if opts.json {
		return report.WriteStateJSON(stdout, v)
	}
	if err := report.WriteState(stdout, v); err != nil {
		return err
	}
	return writeHostAfter(stdout, an)
}
