package analysis

import (
	"context"
	"fmt"
	"slices"

	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// DiffOptions are the options of [Diff].
type DiffOptions struct {
	// BaseAt and At are the moments of BASE and NEW (of FILE's two).
	BaseAt, At steps.Moment
	// Device compares this device of both files; unset, the first device
	// used, with a trace (DeviceChoice.One).
	Device DeviceChoice
	// Full keys stacks by their whole stacks (compare.SideOptions.Full).
	Full bool
	// Align, when AlignStep, lines the two sides' clocks up on their
	// first steps (compare.AlignSteps).
	Align Align
}

// Diff compares two snapshots (paths BASE and NEW), or two moments of one
// (a single path), as `snapview diff` does: each file loaded through open
// (one at a time: the first model is dropped before the second is
// loaded) and its device measured at its moment. Notes on a device the
// allocator never used on are the Diff's own (Diff.Notes); the others,
// and the files' warnings, are returned for standard error, in the order
// they arose. Errors name the file; a moment a file lacks, a device it
// does not have and nothing to compare are *UsageErrors naming the flag
// (--base-at, --at).
func Diff(ctx context.Context, open Open, paths []string, opts DiffOptions) (*compare.Diff, []Note, error) {
	so := compare.SideOptions{Full: opts.Full}
	var (
		sides []*compare.Side
		idle  []string // notes on a --device the allocator never used, shown with the diff's
		notes []Note
	)
	if len(paths) == 1 {
		sd, err := measureFile(ctx, open, paths[0], opts.Device, []steps.Moment{opts.BaseAt, opts.At}, []string{"--base-at", "--at"}, so, &idle, &notes)
		if err != nil {
			return nil, notes, err
		}
		sides = sd
	} else {
		for k, flag := range []string{"--base-at", "--at"} {
			m := opts.BaseAt
			if k == 1 {
				m = opts.At
			}
			sd, err := measureFile(ctx, open, paths[k], opts.Device, []steps.Moment{m}, []string{flag}, so, &idle, &notes)
			if err != nil {
				return nil, notes, err
			}
			sides = append(sides, sd...)
		}
	}
	if opts.Align == AlignStep {
		if err := compare.AlignSteps(sides); err != nil {
			return nil, notes, UsageErrorf("--align step: %v", err)
		}
	}
	d := compare.Compare(sides[0], sides[1])
	d.Notes = append(idle, d.Notes...)
	return d, notes, nil
}

// measureFile loads path, replays the device dc names (or the first with
// a trace), and measures it at each moment (whose errors name the flag of
// the same index in flags). When dc names a device the allocator was
// never used on in the file, a note saying so is appended to idle; the
// file's warnings and notes to notes. Errors name the file.
func measureFile(ctx context.Context, open Open, path string, dc DeviceChoice, at []steps.Moment, flags []string, so compare.SideOptions, idle *[]string, notes *[]Note) ([]*compare.Side, error) {
	var sides []*compare.Side
	err := open(ctx, path, func(s *snapshot.Snapshot, src Source) error {
		for _, w := range s.Warnings {
			*notes = append(*notes, Note{Kind: Warning, File: src.Name, Text: w})
		}
		dev, note, err := dc.One(s, at[len(at)-1])
		if err != nil {
			return err
		}
		if dev < 0 || !slices.Contains(s.Devices(), dev) {
			return UsageErrorf("nothing to compare: the snapshot holds no segments and no trace entries")
		}
		if note != "" {
			*notes = append(*notes, Note{Kind: Info, File: src.Name, Text: note})
		}
		if used := s.UsedDevices(); dc.Set && !slices.Contains(used, dev) {
			n := fmt.Sprintf("%s: the allocator was never used on device %d (a lone snapshot entry, as other ranks' devices have in a distributed process's file): its figures are all 0", src.Name, dev)
			if len(used) > 0 {
				n += fmt.Sprintf("; devices used: %s", units.IntList(used))
			}
			*idle = append(*idle, n)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		so.Recording = compare.NewFileRecording(s)
		// Without a trace, the state the file holds, whatever the moment:
		// there is no other, and summary reads it so, with no replay.
		an := New(s, Options{Mode: replay.Peaks})
		if an.HasTrace(dev) {
			r, err := an.Replay(dev)
			if err != nil {
				return err
			}
			if !r.Check.Equal {
				*notes = append(*notes, EndStateNote(src.Name, []int{dev}, "figures", nil))
			}
		}
		for k, m := range at {
			sd, err := an.Side(dev, m, so)
			if err != nil {
				return RenameFlag(MomentErr(s, dev, m, err), flags[k])
			}
			sd.File = src.Name
			sides = append(sides, sd)
		}
		return nil
	})
	return sides, err
}
