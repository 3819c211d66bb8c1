package analysis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// RanksOptions are the options of [Ranks].
type RanksOptions struct {
	// Device measures only this device of each file; unset, every device
	// the allocator was used on.
	Device DeviceChoice
	// Full keys stacks by their whole stacks (compare.SideOptions.Full).
	Full bool
	// Top bounds the varying stacks (compare.CompareRanks; 0: all).
	Top int
	// Align, when AlignStep, lines the ranks' clocks up on their first
	// steps (compare.AlignSteps) before their peaks are compared.
	Align Align
}

// Align says how the views of several files line their clocks up.
type Align int

const (
	// AlignTime puts every file on one clock, time_us.
	AlignTime Align = iota
	// AlignStep moves each file's clock so that its first step starts
	// where the latest first step does; a file without steps is an
	// *UsageError.
	AlignStep
)

// ranksMemBudget bounds the memory of the files Ranks holds at once
// (bytes): files load in parallel while their estimated models
// (compare.EstimateModel) fit in it, and one at a time when one alone does
// not. Only each rank's aggregates are kept once its file is measured.
const ranksMemBudget = 256 << 20

// Ranks compares the ranks of a distributed run, as `snapview ranks`
// does: args are files or a directory (compare.RankFiles), grouped by
// step (compare.GroupRankFiles), each file's devices measured at their
// allocated peak through open. It returns one compare.RankStep per group, the
// notes for standard error (in the order they arose) and the first
// error: compare.ErrNoRankFiles, standard input, or nothing to compare
// as an *UsageError, else a file's (naming it).
func Ranks(ctx context.Context, open Open, args []string, opts RanksOptions) ([]compare.RankStep, []Note, error) {
	files, dir, err := compare.RankFiles(args)
	if errors.Is(err, compare.ErrNoRankFiles) {
		return nil, nil, &UsageError{Msg: err.Error()}
	}
	if err != nil {
		return nil, nil, err
	}
	if slices.Contains(files, "-") {
		return nil, nil, UsageErrorf("ranks reads files, not standard input (-)")
	}
	groups := compare.GroupRankFiles(dir, files)
	var (
		out   []compare.RankStep
		notes []Note
	)
	for _, g := range groups {
		if note := g.MissingNote(); note != "" && len(groups) == 1 {
			// Several steps show theirs beside their tables.
			notes = append(notes, Note{Kind: Info, Text: note})
		}
		rk, n, err := compareRankFiles(ctx, open, g.Files, opts)
		notes = append(notes, n...)
		if err != nil {
			return nil, notes, err
		}
		out = append(out, compare.RankStep{Group: g, Ranks: rk})
	}
	return out, notes, nil
}

// compareRankFiles measures each file's ranks, files side by side within
// ranksMemBudget, and compares them.
func compareRankFiles(ctx context.Context, open Open, files []string, opts RanksOptions) (*compare.Ranks, []Note, error) {
	var notes []Note
	seen := map[string]bool{}
	for _, f := range files {
		if abs, err := filepath.Abs(f); err == nil {
			if seen[abs] {
				notes = append(notes, Note{Kind: Info, Text: f + " is given more than once: each copy is a rank of its own"})
			}
			seen[abs] = true
		}
	}
	so := compare.SideOptions{Full: opts.Full}
	sides := make([][]*compare.Side, len(files))
	errs := make([]error, len(files))
	fileNotes := make([][]Note, len(files))
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
			return nil, notes, err
		}
		if err := sem.Acquire(ctx, w); err != nil {
			workers.Release(1)
			return nil, notes, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer workers.Release(1)
			defer sem.Release(w)
			sides[i], fileNotes[i], errs[i] = measureRanks(ctx, open, path, opts.Device, so)
			// The file's model is garbage now: collect it before the
			// next file grows the heap to twice its size.
			runtime.GC()
		}()
	}
	wg.Wait()
	var all []*compare.Side
	for i := range files {
		notes = append(notes, fileNotes[i]...)
		if errs[i] != nil {
			return nil, notes, errs[i]
		}
		all = append(all, sides[i]...)
	}
	if len(all) == 0 {
		return nil, notes, UsageErrorf("nothing to compare: no file holds a device with segments or trace entries")
	}
	if opts.Align == AlignStep {
		if err := compare.AlignSteps(all); err != nil {
			return nil, notes, UsageErrorf("--align step: %v", err)
		}
	}
	return compare.CompareRanks(all, opts.Top), notes, nil
}

// measureRanks loads one file and measures each of its devices (or the
// one dc names) at its allocated peak. Errors name the file.
func measureRanks(ctx context.Context, open Open, path string, dc DeviceChoice, so compare.SideOptions) ([]*compare.Side, []Note, error) {
	var (
		sides []*compare.Side
		notes []Note
	)
	err := open(ctx, path, func(s *snapshot.Snapshot, src Source) error {
		for _, w := range s.Warnings {
			notes = append(notes, Note{Kind: Warning, File: src.Name, Text: w})
		}
		if err := dc.Check(s); err != nil {
			return err
		}
		devs := s.UsedDevices()
		if dc.Set {
			devs = slices.DeleteFunc(s.Devices(), func(d int) bool { return d != dc.N })
		} else if idle := len(s.Devices()) - len(devs); idle > 0 {
			notes = append(notes, Note{Kind: Info, File: src.Name, Text: fmt.Sprintf("%d device%s the allocator was never used on (a lone snapshot entry, as other ranks' devices have in a distributed process's file) left out",
				idle, map[bool]string{true: "", false: "s"}[idle == 1])})
		}
		if len(devs) == 0 {
			notes = append(notes, Note{Kind: Info, File: src.Name, Text: "no device the allocator was used on: left out"})
		}
		so.Recording = compare.NewFileRecording(s)
		var differ []int // devices whose replay ends off the file's state
		defer func() {
			if len(differ) > 0 {
				notes = append(notes, EndStateNote(src.Name, differ, "figures", nil))
			}
		}()
		an := New(s, Options{Mode: replay.Peaks})
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
				return MomentErr(s, dev, peak, err)
			}
			sd.File = src.Name
			sides = append(sides, sd)
		}
		return nil
	})
	return sides, notes, err
}

// OneStepFiles expands the argument of `report DIR` as `ranks DIR` does
// (compare.RankFiles): a directory becomes its snapshot files, one page
// for them all. A directory of several steps (torchtitan's one directory
// per step) is an *UsageError naming them, since a page compares one
// step's ranks, and so is a directory without snapshot files. A path that
// is not a directory is returned as it is.
func OneStepFiles(path string) ([]string, error) {
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return []string{path}, nil
	}
	files, dir, err := compare.RankFiles([]string{path})
	if errors.Is(err, compare.ErrNoRankFiles) {
		return nil, &UsageError{Msg: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	if groups := compare.GroupRankFiles(dir, files); len(groups) > 1 {
		names := make([]string, len(groups))
		for i, g := range groups {
			names[i] = g.Name()
		}
		return nil, UsageErrorf("%s holds %d steps (%s): report one step's directory or name its files", path, len(groups), strings.Join(names, ", "))
	}
	return files, nil
}
