package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/leakview"
	"github.com/snapview/snapview/snapshot"
)

// leaksOptions are the flags of `snapview leaks`.
type leaksOptions struct {
	file     string
	top      int
	device   deviceFlag
	at       string
	json     bool
	minBytes string
	focus    string
	ignore   string
	sort     string
	full     bool
	fold     bool
	byAnnot  bool
	by       string
	steps    string
}

func newLeaksCmd() *cobra.Command {
	opts := &leaksOptions{}
	cmd := &cobra.Command{
		Use:   "leaks FILE",
		Short: "find memory that grows with the run and is never given back, grouped by allocation stack",
		Long: `leaks replays the allocator over each device's trace, takes the allocations
still live at one moment (the end of the trace by default), groups them by
allocation stack, and ranks the groups by how much they look like a leak:
memory that grows with the run and is never given back, not simply the most
memory. Temporaries freed before that moment never appear.

Groups. The key is the whole stack as recorded (innermost frame first),
less the unwinder and interpreter frames _memory_viz also drops: two call
sites never share a group, even when they run the same PyTorch op, and two
ops called from one line of yours (relu and max_pool2d) stay apart, because
one may leak and the other not. --fold keys by your frames only (frames
inside torch/, the Python standard library and C++ dropped), merging stacks
that differ only inside PyTorch (autocast on or off, first-call paths); a
stack with no frame of yours keeps its whole stack as key. The table shows
your frames and folds the others into one line per run, such as
"(torch) functional.py:1723 relu"; --full shows every frame.
A group names the annotations (annotate entries, from
torch.cuda.memory._annotate_tensor in PyTorch 2.14) of its live allocations;
--by-annotation groups by them instead of by stack. A group names the
compiled regions (compile_context, "Torch-Compiled Region: 0/1") its live
allocations were made in; --by region groups by region instead, the
allocations outside torch.compile forming one group.

Steps. Growth is measured per training step: steps are found from a
record_function range that repeats once per step (ProfilerStep#N from
torch.profiler, a range named "step N", or the optimizer's own
Optimizer.step#... range), else from the outermost repeating allocation:
one made throughout the trace, freed again, that brackets every allocation
repeating more often (the input batch of each iteration, not a layer or a
generated token), else the trace is cut into 20 slices of equal entries.
Optimizer.step ends an iteration rather than starting one: when such an
allocation repeats as often as it, the steps start at that allocation, so
step K ends where the training loop's K-th iteration does.
--steps forces one source. Step 0 holds what came before the first step
(model creation, ...). A group's growth is its live bytes at the end of
each step, counting all its allocations, the freed ones too.

Score (bytes), the default order:

    score = B x S x (1 - 1/N)

  B  the group's live bytes allocated in its window: from the step of its
     first allocation, or from its last burst of frees (a step that ends
     with at most half the live bytes of the one before) when it had one;
     bytes older than the trace count for nothing
  S  steadiness, 0 to 1: 1 minus the largest gap between the share of B
     allocated by the end of each step and the share of the window's steps
     elapsed. 1 when B came evenly, step after step; near 0 when it came
     at once (at the start, or in the last step)
  N  the number of steps of the window in which B was allocated: a group
     allocated in a single step scores 0

Groups whose verdict says they do not grow score 0: allocated before or in
the first step and never freed (parameters, optimizer state, caches filled
at start), freed and reallocated every step (a per-step working set),
once, in the last steps (in use at that moment), flat since some step
(bounded caches), or alive before the trace began (recording started late,
or max_entries wrapped). --sort bytes or count ranks by live bytes or
allocations.

--at chooses the moment: auto (the default: the end of the trace, or the
last OOM when memory was freed after it, since those frees are the OOM's
unwinding, not a fix), end, peak, oom, oom:K, entry:N, time:T or step:K
(see snapview state --help).

Filters, as in pprof: --focus RE keeps allocations whose stack has a frame
matching RE, --ignore RE drops those that have one; frames match as
"filename:line name". --min-bytes drops smaller groups: a byte count with
a binary unit (512KiB, 10MiB, 1GiB: powers of 1024) or a decimal one (500KB,
10MB, 1GB: powers of 1000); a bare K, M or G is refused as ambiguous. --top
shows the first N groups of each device (at least 1).

An empty snapshot (no segments, no trace entries) is not an error: leaks
says there is nothing to show and exits 0.

` + hostHelp,
		Example: `  snapview leaks snapshot.pickle
  snapview leaks --top 5 --fold train_snapshot.pickle
  snapview leaks --focus 'train\.py' --ignore 'optim/' --min-bytes 10MiB \
      snapshot.pickle
  snapview leaks --at oom --json oom_snapshot.pickle > leaks.json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if _, err := opts.analyzeOptions(); err != nil {
				return err
			}
			if opts.at != "auto" {
				if _, err := parseMoment(opts.at); err != nil {
					return err
				}
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runLeaks(cmd.Context(), opts, cmd.InOrStdin(), out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.top, "top", 10, "number of groups shown per device (at least 1)")
	addDeviceFlag(f, &opts.device, "show only this CUDA device ordinal", "every device in the file")
	f.StringVar(&opts.at, "at", "auto", "the moment: auto, end, peak, oom, oom:K, entry:N, time:T or step:K")
	f.BoolVar(&opts.json, "json", false, "write JSON (growth per step, whole stacks) instead of text")
	f.StringVar(&opts.minBytes, "min-bytes", "0", "leave out groups with fewer live bytes (4096, 512KiB, 10MiB, 1GiB; KB, MB, GB are powers of 1000)")
	f.StringVar(&opts.focus, "focus", "", "keep only allocations whose stack has a frame matching this regexp")
	f.StringVar(&opts.ignore, "ignore", "", "drop allocations whose stack has a frame matching this regexp")
	f.StringVar(&opts.sort, "sort", "score", "order of the groups: score, bytes or count")
	f.BoolVar(&opts.full, "full", false, "show every frame of each stack instead of folding torch, stdlib and C++ frames")
	f.BoolVar(&opts.fold, "fold", false, "group by your frames only, merging stacks that differ only inside torch/stdlib/C++")
	f.StringVar(&opts.by, "by", "stack", "what a group is: stack, annotation (as --by-annotation) or region (the torch.compile region of each allocation, compile_context)")
	f.BoolVar(&opts.byAnnot, "by-annotation", false, "group by the annotations torch.cuda.memory._annotate_tensor attached to each allocation (annotate entries) instead of by stack")
	f.StringVar(&opts.steps, "steps", "auto", "how to find steps: auto, annotation, pattern or slices")
	return cmd
}

// analyzeOptions checks the flags and turns them into analyze options
// (At left unset); errors are usage errors.
func (o *leaksOptions) analyzeOptions() (leaks.LeakOptions, error) {
	var lo leaks.LeakOptions
	if o.top < 1 {
		return lo, usageErrorf("--top must be at least 1, got %d", o.top)
	}
	lo.Top = o.top
	b, err := units.ParseBytes(o.minBytes)
	if err != nil {
		return lo, usageErrorf("--min-bytes %q: %v", o.minBytes, err)
	}
	lo.MinBytes = b
	if lo.Sort, err = leaks.ParseLeakSort(o.sort); err != nil {
		return lo, usageErrorf("--sort: %v", err)
	}
	if lo.Steps, err = steps.ParseStepSource(o.steps); err != nil {
		return lo, usageErrorf("--steps: %v", err)
	}
	for _, re := range []struct {
		flag, expr string
		dst        **regexp.Regexp
	}{{"focus", o.focus, &lo.Focus}, {"ignore", o.ignore, &lo.Ignore}} {
		if re.expr == "" {
			continue
		}
		if *re.dst, err = regexp.Compile(re.expr); err != nil {
			return lo, usageErrorf("--%s: %v", re.flag, err)
		}
	}
	lo.Fold = o.fold
	lo.ByAnnotation = o.byAnnot
	switch o.by {
	case "stack":
	case "annotation":
		lo.ByAnnotation = true
	case "region":
		if o.byAnnot {
			return lo, usageErrorf("--by region and --by-annotation group differently: give one")
		}
		lo.ByRegion = true
	default:
		return lo, usageErrorf("--by %q: want stack, annotation or region", o.by)
	}
	return lo, nil
}

func runLeaks(ctx context.Context, opts *leaksOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	lo, err := opts.analyzeOptions()
	if err != nil {
		return err
	}
	var at steps.Moment
	if opts.at != "auto" {
		if at, err = parseMoment(opts.at); err != nil {
			return err
		}
	}
	return withSnapshotCtx(ctx, stdin, stderr, opts.file, func(s *snapshot.Snapshot, _ source) error {
		return findLeaks(ctx, opts, lo, at, s, stdout, stderr)
	})
}

// findLeaks prints the leak report of s.
func findLeaks(ctx context.Context, opts *leaksOptions, lo leaks.LeakOptions, at steps.Moment, s *snapshot.Snapshot, stdout, stderr io.Writer) error {
	for _, w := range s.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", kit.Escape(w))
	}
	if err := opts.device.check(s); err != nil {
		return err
	}
	devices := s.Devices()
	what := "the snapshot"
	if opts.device.set {
		if !slices.Contains(devices, opts.device.n) {
			devices = nil // in device_traces, with an empty trace
		} else {
			devices = []int{opts.device.n}
		}
		what = fmt.Sprintf("device %d", opts.device.n)
	}
	an := analysis.New(s, analysis.Options{})
	if len(devices) == 0 && !opts.json {
		return writeNothing(stdout, an, what)
	}
	devices = opts.device.shown(devices, stderr, "leaks")
	var reps []*leaks.LeakReport
	for _, dev := range devices {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := an.Replay(dev)
		if err != nil {
			return err
		}
		if !r.Check.Equal {
			warnEndState(stderr, "", []int{dev}, "live allocations", r.Check.Differences)
		}
		dlo := lo
		dlo.At = leaks.DefaultLeakMoment(r)
		if opts.at != "auto" && len(r.Allocated) > 0 { // without a trace only the file's state exists
			if dlo.At, err = resolveMoment(s, r, at); err != nil {
				var a *absentError
				if opts.device.set || len(devices) == 1 || !errors.As(err, &a) {
					return err
				}
				// Of several devices, one may have no OOM (or no peak).
				fmt.Fprintf(stderr, "warning: device %d skipped: %s\n", dev, a.msg)
				continue
			}
		}
		rep, err := an.Leaks(dev, dlo)
		if err != nil {
			return err
		}
		an.Forget(dev) // one device at a time, as a file of many devices needs
		reps = append(reps, rep)
	}
	if len(reps) == 0 && len(devices) > 0 {
		return absentf("", "no device has the moment --at %s", opts.at)
	}
	var err error
	if opts.json {
		err = leakview.WriteLeaksJSON(stdout, s, reps, hostJSON(an))
	} else {
		err = leakview.WriteLeaks(stdout, s, reps, leakview.LeakOptions{At: opts.at, Full: opts.full, Steps: lo.Steps})
		if err == nil {
			err = writeHostAfter(stdout, an)
		}
	}
	if err != nil {
		return err
	}
	// After the report, where a reader looks last.
	for _, h := range leakview.LeakHints(reps) {
		fmt.Fprintf(stderr, "hint: %s\n", kit.Escape(h))
	}
	return nil
}
