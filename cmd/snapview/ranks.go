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
		Use:     "ranks FILE... | ranks DIR",
		Short:   "compare the ranks of a distributed run side by side: which rank uses more memory, and why",
		Long:    helpText("ranks"),
		Example: helpText("ranks.examples"),
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
