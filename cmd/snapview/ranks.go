package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"golang.org/x/sync/semaphore"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/compareview"
	"github.com/snapview/snapview/snapshot"
)

// ranksOptions are the flags of `snapview ranks`.
type ranksOptions struct {
	device deviceFlag
	full   bool
	top    int
	frames int
	json   bool
}

// ranksMemBudget bounds the memory of the files `ranks` holds at once:
// files load in parallel while their estimated models fit in it, and one
// at a time when one alone does not. Only each rank's aggregates are kept
// once its file is measured.
const ranksMemBudget = 256 << 20

func newRanksCmd() *cobra.Command {
	opts := &ranksOptions{}
	cmd := &cobra.Command{
		Use:   "ranks FILE... | ranks DIR",
		Short: "compare the ranks of a distributed run side by side: which rank uses more memory, and why",
		Long: `ranks compares the snapshots of a distributed run, one file per rank (or
a directory of them: its files ending in .pickle, .pkl, .json, .gz or .xz,
and those of its subdirectories, in name order, numbers by value: rank2
before rank10), and the devices of one file (a pipeline-parallel process
that recorded several GPUs): each device of each file is one rank.

In a directory the rank and the step come from the names, as frameworks
write them: torchtitan's iteration_N/rankR_memory_snapshot.pickle (and
iteration_N_exit/ on an OOM) and step_N/RRRRRR_step_N.pickle,
Megatron-Bridge's memory_trace_R.pickle, rankR anywhere in a name (with a
pid or a timestamp beside it). Files of several steps are compared step by
step ("== step 10: 4 files =="; --json: {"steps": [{"step", "exit",
"files", "missing_note", "comparison": the object below}]}). Where the
names give a world size (rank3_of_8, world8, ws8) the missing ranks are
named; else the ranks missing below the highest one, or that rank 0's file
is alone.

Each rank is named by its file: the rank its name gives (rank10.pickle is
rank 10; the Rank column shows '-' where the name has none), else the file.

For each rank: the peak allocated and reserved bytes over its trace and
when they fell (the training step, where steps are found as leaks finds
them, else the trace entry; and the seconds after the first entry),
reserved minus allocated at the allocated peak (memory cached but not in
use), the allocated and reserved bytes at the end, the OOMs, the cudaMalloc
retries (a lower bound) and how much of the run the trace covers. Then
each figure's min, median, max and spread (max minus min) over the ranks;
the ranks whose peak allocated or reserved bytes are more than 10% away
from the median rank's are flagged (the median rank is the middle one by
peak allocated bytes, the lower of the two middle ones for an even count).
Then the allocation stacks whose live bytes at each rank's peak vary most
across the ranks (matched by their user frames, as diff and leaks --fold
do; --full: whole stacks), and the most deviant rank diffed against the
median rank (see snapview diff --help).

Each rank is taken at its own peak: the peaks of different ranks fall at
different times (and steps), and ranks says so when they do.

Files are read in parallel within a memory bound (256 MiB of estimated
models at a time; a larger file is read alone); only each rank's figures
and stack totals are kept, so the memory ranks needs does not grow with
the number of files.

--json writes one object:
  {"ranks": [{"name", "rank", "file", "device", "peak_allocated_bytes",
              "peak_reserved_bytes", "current_allocated_bytes",
              "current_reserved_bytes", "ooms", "exactness",
              "peak_allocated_entry", "peak_allocated_step",
              "peak_reserved_entry", "peak_reserved_step",
              "peak_allocated_time_us", "peak_reserved_time_us",
              "reserved_minus_allocated_bytes", "num_alloc_retries",
              "coverage"}],
   "spreads":  [{"figure", "min", "median", "max", "spread",
                 "min_rank", "median_rank", "max_rank"}],
   "outliers": [{"rank", "name", "file", "device", "figure", "value",
                 "median", "deviation"}],
   "stacks":   [{"key", "frames": [{"filename", "line", "name"}],
                 "bytes": [per rank, null where unknown], "min", "max",
                 "spread"}],
   "median_rank", "outlier_rank", "peaks_apart", "unknown_ranks",
   "diff": the median rank (base) against the outlier (new), as
           snapview diff --json writes it, or null}
A rank's "rank" is the number its file name gives (rank10.pickle: 10),
null where the name has none; "name" is how the text names it ("rank 10",
else the file). "rank", "min_rank", "median_rank", "max_rank",
"outlier_rank" and "unknown_ranks" elsewhere are indexes into "ranks".
A rank whose peaks are unknown (a file with no trace) has null peaks and
is left out of the spreads, the outliers, the median, the stacks and
peaks_apart (it is listed in unknown_ranks); ooms and num_alloc_retries
are null where unknown. Exactness ("exact", "lower_bound", "unknown") is
that of the peaks; steps are -1 where none were found; the *_time_us are
the peaks' time_us (null without trace times), "When" in the text less
clock_origin_us (or the rank's first entry); deviation is
(value - median) / median. Sizes are bytes.

A file that cannot be read or is not a snapshot is an error naming it
(exit code 1).`,
		Example: `  snapview ranks rank0.pickle rank1.pickle rank2.pickle rank3.pickle
  snapview ranks snapshots/
  snapview ranks --json pipeline.pickle > ranks.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("ranks takes the files of the ranks (or a directory of them)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.top < 0 {
				return usageErrorf("--top must be 0 (all) or more, got %d", opts.top)
			}
			if opts.frames < 0 {
				return usageErrorf("--frames must be 0 (all) or more, got %d", opts.frames)
			}
			return withTextOutput(cmd, !opts.json, func(out io.Writer) error {
				return runRanks(cmd.Context(), opts, args, out, cmd.ErrOrStderr())
			})
		},
	}
	f := cmd.Flags()
	addDeviceFlag(f, &opts.device, "compare only this CUDA device ordinal of each file", "every device of every file")
	f.BoolVar(&opts.full, "full", false, "match stacks by their whole stacks instead of their user frames")
	f.IntVar(&opts.top, "top", 10, "number of varying stacks and of diffed stacks listed (0: all)")
	f.IntVar(&opts.frames, "frames", 6, "most lines printed per stack (0: all)")
	f.BoolVar(&opts.json, "json", false, "write JSON instead of text")
	return cmd
}

func runRanks(ctx context.Context, opts *ranksOptions, args []string, stdout, stderr io.Writer) error {
	files, dir, err := compare.RankFiles(args)
	if errors.Is(err, compare.ErrNoRankFiles) {
		return &usageError{err}
	}
	if err != nil {
		return err
	}
	if slices.Contains(files, stdinPath) {
		return usageErrorf("ranks reads files, not standard input (-)")
	}
	groups := compare.GroupRankFiles(dir, files)
	if len(groups) == 1 {
		if note := groups[0].MissingNote(); note != "" {
			fmt.Fprintf(stderr, "note: %s\n", note)
		}
		return compareRankFiles(ctx, opts, files, stdout, stderr)
	}
	// Several steps: the ranks of each step compared among themselves,
	// step after step.
	if opts.json {
		io.WriteString(stdout, "{\"steps\": [")
	}
	for i, g := range groups {
		note := g.MissingNote()
		if opts.json {
			var buf strings.Builder
			if err := compareRankFiles(ctx, opts, g.Files, &buf, stderr); err != nil {
				return err
			}
			step := "null"
			if g.HasStep {
				step = strconv.Itoa(g.Step)
			}
			fj, _ := json.Marshal(g.Files)
			nj, _ := json.Marshal(note)
			sep := ","
			if i == 0 {
				sep = ""
			}
			fmt.Fprintf(stdout, "%s\n {\"step\": %s, \"exit\": %t, \"files\": %s, \"missing_note\": %s, \"comparison\": %s}",
				sep, step, g.Exit, fj, nj, strings.TrimSpace(buf.String()))
			continue
		}
		if i > 0 {
			io.WriteString(stdout, "\n")
		}
		fmt.Fprintf(stdout, "== %s: %s ==\n", g.Name(), units.Count(len(g.Files), "file", "files"))
		if note != "" {
			fmt.Fprintf(stdout, "note: %s\n", note)
		}
		if err := compareRankFiles(ctx, opts, g.Files, stdout, stderr); err != nil {
			return err
		}
	}
	if opts.json {
		io.WriteString(stdout, "\n]}\n")
	}
	return nil
}

// compareRankFiles measures each file's ranks and writes their comparison.
func compareRankFiles(ctx context.Context, opts *ranksOptions, files []string, stdout, stderr io.Writer) error {
	seen := map[string]bool{}
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			if seen[abs] {
				fmt.Fprintf(stderr, "note: %s is given more than once: each copy is a rank of its own\n", f)
			}
			seen[abs] = true
		}
	}
	so := compare.SideOptions{Full: opts.full}
	sides := make([][]*compare.Side, len(files))
	errs := make([]error, len(files))
	notes := make([]strings.Builder, len(files))
	sem := semaphore.NewWeighted(ranksMemBudget)
	workers := semaphore.NewWeighted(int64(max(1, runtime.GOMAXPROCS(0))))
	var wg sync.WaitGroup
	for i, path := range files {
		var size int64
		if st, err := os.Stat(path); err == nil {
			size = st.Size()
		}
		w := min(max(compare.EstimateModel(path, size), 1), ranksMemBudget)
		if err := workers.Acquire(ctx, 1); err != nil {
			return err
		}
		if err := sem.Acquire(ctx, w); err != nil {
			workers.Release(1)
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer workers.Release(1)
			defer sem.Release(w)
			sides[i], errs[i] = measureRanks(ctx, path, &opts.device, so, &notes[i])
			// The file's model is garbage now: collect it before the
			// next file grows the heap to twice its size.
			runtime.GC()
		}()
	}
	wg.Wait()
	var all []*compare.Side
	for i := range files {
		io.WriteString(stderr, notes[i].String())
		if errs[i] != nil {
			return errs[i]
		}
		all = append(all, sides[i]...)
	}
	if len(all) == 0 {
		return usageErrorf("nothing to compare: no file holds a device with segments or trace entries")
	}
	rk := compare.CompareRanks(all, opts.top)
	ro := compareview.RanksOptions{Top: opts.top, Frames: opts.frames, Full: opts.full}
	if opts.json {
		return compareview.WriteRanksJSON(stdout, rk, ro)
	}
	return compareview.WriteRanks(stdout, rk, ro)
}

// measureRanks loads one file and measures each of its devices (or the
// one f names) at its allocated peak. Warnings and notes go to notes, so
// that parallel loads do not mix their lines. Errors name the file.
func measureRanks(ctx context.Context, path string, f *deviceFlag, so compare.SideOptions, notes io.Writer) ([]*compare.Side, error) {
	var sides []*compare.Side
	err := withSnapshotCtx(ctx, nil, io.Discard, path, func(s *snapshot.Snapshot, src source) error {
		for _, w := range s.Warnings {
			fmt.Fprintf(notes, "warning: %s: %s\n", src.name, w)
		}
		if err := f.check(s); err != nil {
			return err
		}
		devs := s.UsedDevices()
		if f.set {
			devs = slices.DeleteFunc(s.Devices(), func(d int) bool { return d != f.n })
		} else if idle := len(s.Devices()) - len(devs); idle > 0 {
			fmt.Fprintf(notes, "note: %s: %d device%s the allocator was never used on (a lone snapshot entry, as other ranks' devices have in a distributed process's file) left out\n",
				src.name, idle, map[bool]string{true: "", false: "s"}[idle == 1])
		}
		if len(devs) == 0 {
			fmt.Fprintf(notes, "note: %s: no device the allocator was used on: left out\n", src.name)
		}
		so.Recording = compare.NewFileRecording(s)
		var differ []int // devices whose replay ends off the file's state
		defer func() { warnEndState(notes, src.name, differ, "figures", nil) }()
		an := analysis.New(s, analysis.Options{Mode: replay.Peaks})
		peak := steps.Moment{Kind: steps.MomentPeak}
		for _, dev := range devs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if an.HasTrace(dev) {
				r, err := an.Replay(dev)
				if err != nil {
					return err
				}
				if !r.Check.Equal {
					differ = append(differ, dev)
				}
			}
			sd, err := an.Side(dev, peak, so)
			if err != nil {
				return momentError(s, dev, peak, err)
			}
			sd.File = src.name
			sides = append(sides, sd)
		}
		return nil
	})
	return sides, err
}
