package html

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/report/compareview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// FileOptions are the options of `snapview report`: of [BuildFile] (one
// file) and [BuildFiles] (several).
type FileOptions struct {
	// Device draws only this device; unset, every device with segments or
	// trace entries (of several files, those the allocator was used on).
	Device analysis.DeviceChoice
	// Top is Options.Top.
	Top int
	// Monitor is Options.Monitor (one file only). When it has an
	// nvidia-smi log, each device is set against the log's GPU
	// monitor.GPUFor picks: GPU's (--gpu) when set.
	Monitor *MonitorInput
	GPU     analysis.DeviceChoice
	// Base makes BuildFiles' page the diff of its two files (BASE, NEW)
	// rather than their ranks.
	Base bool
	// Align lines the timelines of several files up (AlignSteps).
	Align analysis.Align
}

// BuildFile builds the report of one snapshot s, read from src, as
// `snapview report FILE` draws it. A file of pinned host memory only
// (record_cuda=False) gets its host section with no empty device 0. It
// returns the file's warnings and a warning when devices are left out as
// notes; errors are the device choice's (*analysis.UsageError) and
// Build's.
func BuildFile(ctx context.Context, s *snapshot.Snapshot, src analysis.Source, o FileOptions) (*Report, []analysis.Note, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var notes []analysis.Note
	for _, w := range s.Warnings {
		notes = append(notes, analysis.Note{Kind: analysis.Warning, Text: w})
	}
	devices, err := o.Device.Pick(s)
	if err != nil {
		return nil, notes, err
	}
	ho := Options{Title: src.Name, SizeOnDisk: s.Format.Bytes, Top: o.Top, Monitor: o.Monitor}
	if src.Size > 0 {
		ho.SizeOnDisk = src.Size
	}
	f := analysis.New(s, ho.Analysis())
	if !o.Device.Set && len(s.Devices()) == 0 && f.HasHost() {
		// Pinned host memory only (record_cuda=False): the page is its
		// host section, with no empty device 0 beside it.
		devices = []int{}
	}
	ho.Devices = devices
	if mon := o.Monitor; mon != nil {
		m := *mon
		m.GPU, m.GPUSet = o.GPU.N, o.GPU.Set
		ho.Monitor = &m
	}
	r, err := Build(f, ho)
	if err != nil {
		return nil, notes, fmt.Errorf("analysing the snapshot: %w", err)
	}
	if n := r.DevicesLeftOut; n > 0 {
		notes = append(notes, analysis.Note{Kind: analysis.Warning, Text: fmt.Sprintf("%d of the file's devices are left out of the report (over %d, the most it draws); --device N draws another", n, len(r.Devices))})
	}
	return r, notes, nil
}

// pageTextWidth is the width of the text tables a report of several
// files shows (the page scrolls sideways; a terminal's 80 or 120 columns
// would leave columns out).
const pageTextWidth = 240

// BuildFiles builds one report of several files, as `snapview report
// FILE...` (or `--base BASE FILE`, o.Base: paths are BASE and FILE) draws
// it: the ranks table (or the diff) on top, then each file's devices.
// Files are read through open one at a time; only each one's report and
// comparison figures are kept. It returns the files' warnings as notes.
// Errors name the file; a file with nothing to compare, a moment or device
// it lacks and, with --align step, a timeline without steps are
// *analysis.UsageErrors.
func BuildFiles(ctx context.Context, open analysis.Open, paths []string, o FileOptions) (*Report, []analysis.Note, error) {
	var (
		reports []*Report
		sides   []*compare.Side
		notes   []analysis.Note
	)
	for i, path := range paths {
		err := open(ctx, path, func(s *snapshot.Snapshot, src analysis.Source) error {
			r, sd, n, err := buildRank(ctx, s, src, o)
			notes = append(notes, n...)
			reports = append(reports, r)
			sides = append(sides, sd...)
			return err
		})
		if err != nil {
			return nil, notes, err
		}
		if o.Base && len(sides) != i+1 {
			return nil, notes, analysis.UsageErrorf("%s: nothing to compare: the snapshot holds no segments and no trace entries", path)
		}
	}
	title, text, err := compareText(sides, o.Base)
	if err != nil {
		return nil, notes, err
	}
	name := strings.Join(paths, ", ")
	if o.Base {
		name = paths[1] + " against " + paths[0]
	}
	m := Merge(reports, name, title, text)
	if o.Align == analysis.AlignStep {
		if err := AlignSteps(m); err != nil {
			return nil, notes, analysis.UsageErrorf("--align step: %v", err)
		}
	}
	return m, notes, nil
}

// buildRank builds the report of one of several files and measures its
// devices at their allocated peaks (one device, as diff does, with
// o.Base), from the replay the page was drawn from.
func buildRank(ctx context.Context, s *snapshot.Snapshot, src analysis.Source, o FileOptions) (*Report, []*compare.Side, []analysis.Note, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	var notes []analysis.Note
	for _, w := range s.Warnings {
		notes = append(notes, analysis.Note{Kind: analysis.Warning, File: src.Name, Text: w})
	}
	devices, err := o.Device.Pick(s)
	if err != nil {
		return nil, nil, notes, err
	}
	used := s.UsedDevices()
	if !o.Device.Set && len(used) > 0 {
		// A rank's file lists the other ranks' devices with a lone
		// snapshot entry: nothing to draw.
		devices = used
	}
	ho := Options{Title: src.Name, SizeOnDisk: s.Format.Bytes, Top: o.Top, Devices: devices}
	if src.Size > 0 {
		ho.SizeOnDisk = src.Size
	}
	f := analysis.New(s, ho.Analysis())
	r, err := Build(f, ho)
	if err != nil {
		return nil, nil, notes, fmt.Errorf("analysing the snapshot: %w", err)
	}
	peak := steps.Moment{Kind: steps.MomentPeak}
	if o.Base {
		// The diff compares one device of each file, as diff does.
		dev, _, err := o.Device.One(s, peak)
		if err != nil {
			return nil, nil, notes, err
		}
		devices = []int{dev}
	}
	var sides []*compare.Side
	so := compare.SideOptions{Recording: compare.NewFileRecording(s)}
	for _, dev := range devices {
		if !slices.Contains(used, dev) {
			continue
		}
		sd, err := f.Side(dev, peak, so)
		if err != nil {
			return nil, nil, notes, analysis.MomentErr(s, dev, peak, err)
		}
		sd.File = src.Name
		sides = append(sides, sd)
	}
	return r, sides, notes, nil
}

// compareText is the text on top of a report of several files and its
// title: the diff of the two sides (base), else the ranks of them all.
// The page scrolls: its tables keep every column a terminal would leave
// out (pageTextWidth).
func compareText(sides []*compare.Side, base bool) (title, text string, err error) {
	var b bytes.Buffer
	tw := kit.NewWriter(&b, pageTextWidth)
	title = "Ranks"
	if base {
		title = "Diff"
		d := compare.Compare(sides[0], sides[1])
		err = compareview.WriteDiff(tw, d, compareview.DiffOptions{BaseAt: "peak", NewAt: "peak", Top: 20, Frames: 8})
	} else if len(sides) > 0 {
		err = compareview.WriteRanks(tw, compare.CompareRanks(sides, 10), compareview.RanksOptions{Top: 10, Frames: 6})
	}
	if err != nil {
		return "", "", err
	}
	if err := tw.Flush(); err != nil {
		return "", "", err
	}
	return title, b.String(), nil
}
