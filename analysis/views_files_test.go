package analysis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// testOpen is an Open over snapshot.Load, as cmd's loader completes the
// file (replay.Complete) and names it in errors; opened counts the loads.
func testOpen(opened *int) Open {
	return func(ctx context.Context, path string, use func(*snapshot.Snapshot, Source) error) error {
		s, err := snapshot.Load(path)
		if err != nil {
			return err
		}
		*opened++
		s, _ = replay.Complete(s)
		if err := use(s, Source{Name: path}); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	}
}

func testdata(name string) string { return filepath.Join("..", "testdata", "snapshots", name) }

// TestRanksBuilder: the ranks of the ddp pair, each file's idle device a
// note naming the file, a file given twice a note, and the errors that
// are the command line's (*UsageError).
func TestRanksBuilder(t *testing.T) {
	a, b := testdata("ddp_rank0.pickle"), testdata("ddp_rank1.pickle")
	n := 0
	st, notes, err := Ranks(context.Background(), testOpen(&n), []string{a, b, a}, RanksOptions{Top: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 || len(st[0].Ranks.Sides) != 3 || n != 3 {
		t.Fatalf("%d steps, %d files opened", len(st), n)
	}
	var idle, twice []string
	for _, nt := range notes {
		switch {
		case nt.Kind == Info && strings.Contains(nt.Text, "the allocator was never used on"):
			idle = append(idle, nt.File)
		case nt.Kind == Info && strings.Contains(nt.Text, "is given more than once"):
			twice = append(twice, nt.Text)
		default:
			t.Errorf("unexpected note %+v", nt)
		}
	}
	if !slices.Equal(idle, []string{a, b, a}) || len(twice) != 1 {
		t.Errorf("idle-device notes for %q, given-twice notes %q", idle, twice)
	}

	for _, tc := range []struct {
		args []string
		opts RanksOptions
		want string
	}{
		{[]string{t.TempDir()}, RanksOptions{}, "no snapshot files"},
		{[]string{a, "-"}, RanksOptions{}, "ranks reads files, not standard input (-)"},
		{[]string{a, b}, RanksOptions{Device: DeviceChoice{Set: true, N: 7}}, "--device 7: the snapshot has no device 7"},
		{[]string{a, testdata("annotate.pickle")}, RanksOptions{Align: AlignStep}, "--align step: "},
	} {
		_, _, err := Ranks(context.Background(), testOpen(&n), tc.args, tc.opts)
		var ue *UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Ranks(%q): %v, want a *UsageError with %q", tc.args, err, tc.want)
		}
	}
}

// TestDiffBuilder: two moments of one file are measured from one load;
// a moment the file lacks is an *AbsentError naming the flag asked for.
func TestDiffBuilder(t *testing.T) {
	f := testdata("mlp_train.pickle")
	n := 0
	d, notes, err := Diff(context.Background(), testOpen(&n), []string{f}, DiffOptions{
		BaseAt: steps.Moment{Kind: steps.MomentStep, N: 1}, At: steps.Moment{Kind: steps.MomentEnd},
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || d.Base.File != f || d.New.File != f || d.Base.At >= d.New.At || len(notes) != 0 {
		t.Errorf("%d loads, base %s at %d, new %s at %d, notes %+v", n, d.Base.File, d.Base.At, d.New.File, d.New.At, notes)
	}
	_, _, err = Diff(context.Background(), testOpen(&n), []string{f, f}, DiffOptions{
		BaseAt: steps.Moment{Kind: steps.MomentOOM}, At: steps.Moment{Kind: steps.MomentPeak},
	})
	var ae *AbsentError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "has no oom entry") {
		t.Errorf("diff --base-at oom of a file without one: %v, want an *AbsentError", err)
	}
	_, _, err = Diff(context.Background(), testOpen(&n), []string{f}, DiffOptions{
		BaseAt: steps.Moment{Kind: steps.MomentEntry, N: 1 << 30}, At: steps.Moment{Kind: steps.MomentPeak},
	})
	if err == nil || !strings.Contains(err.Error(), "--base-at") || strings.Contains(err.Error(), "--at ") {
		t.Errorf("diff --base-at entry:2^30: %v, want an error naming --base-at", err)
	}
}

// TestOneStepFiles: report DIR takes a directory of one step's ranks and
// refuses one of several steps, naming them.
func TestOneStepFiles(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(testdata("ddp_rank0.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"iteration_1/rank0_memory_snapshot.pickle", "iteration_2/rank0_memory_snapshot.pickle"} {
		os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := OneStepFiles(filepath.Join(dir, "iteration_1"))
	if err != nil || len(files) != 1 {
		t.Errorf("one step's directory: %q, %v", files, err)
	}
	_, err = OneStepFiles(dir)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "holds 2 steps") {
		t.Errorf("two steps' directory: %v, want a *UsageError naming them", err)
	}
	if files, err := OneStepFiles("no/such/file"); err != nil || !slices.Equal(files, []string{"no/such/file"}) {
		t.Errorf("a path that is not a directory: %q, %v", files, err)
	}
}

// TestDeviceChoice: the --device rule every view shares.
func TestDeviceChoice(t *testing.T) {
	s := load(t, "ddp_rank0.pickle")
	if got, err := (DeviceChoice{}).Pick(s); err != nil || !slices.Equal(got, s.Devices()) {
		t.Errorf("Pick unset: %v %v, want %v", got, err, s.Devices())
	}
	if got, err := (DeviceChoice{Set: true, N: 1}).Pick(s); err != nil || !slices.Equal(got, []int{1}) {
		t.Errorf("Pick 1: %v %v", got, err)
	}
	var ue *UsageError
	if _, err := (DeviceChoice{Set: true, N: 5}).Pick(s); !errors.As(err, &ue) || err.Error() != "--device 5: the snapshot has no device 5 (devices: 0, 1)" {
		t.Errorf("Pick 5: %v", err)
	}
	if dev, note, err := (DeviceChoice{}).One(s, steps.Moment{Kind: steps.MomentPeak}); err != nil || dev != 0 || !strings.HasPrefix(note, "showing device 0, the first with a trace") {
		t.Errorf("One: %d %q %v", dev, note, err)
	}
	many := make([]int, MaxShownDevices+3)
	for i := range many {
		many[i] = i
	}
	if got, notes := (DeviceChoice{}).Shown(many, "explain"); len(got) != MaxShownDevices || len(notes) != 1 || notes[0].Kind != Warning ||
		!strings.HasPrefix(notes[0].Text, "3 of the file's 67 devices are left out of explain") {
		t.Errorf("Shown of %d: %d devices, notes %+v", len(many), len(got), notes)
	}
	if got, notes := (DeviceChoice{Set: true, N: 2}).Shown(many, "explain"); len(got) != len(many) || notes != nil {
		t.Errorf("Shown with a device chosen: %d devices, notes %+v", len(got), notes)
	}
}

// TestWhatIfChosen: a file with no trace to simulate is the command
// line's question the file cannot answer; a file with one is simulated
// per device with a trace, in order, each reporting its progress.
func TestWhatIfChosen(t *testing.T) {
	_, _, err := New(load(t, "host_memory.pickle"), Options{Mode: replay.StatsOnly}).WhatIfChosen(DeviceChoice{}, whatif.Options{}, nil)
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "no device trace entries to simulate") && !strings.Contains(err.Error(), "no trace entries to simulate") {
		t.Errorf("whatif of a file without a trace: %v", err)
	}
	var progressed []int
	res, notes, err := New(load(t, "ddp_rank0.pickle"), Options{Mode: replay.StatsOnly}).WhatIfChosen(DeviceChoice{}, whatif.Options{Confs: []string{}},
		func(dev, done, total int) { progressed = append(progressed, dev) })
	if err != nil {
		t.Fatal(err)
	}
	var devs []int
	for _, r := range res {
		devs = append(devs, r.Device)
	}
	// Device 1 holds a lone trace entry (the other rank's): a trace too.
	if !slices.Equal(devs, []int{0, 1}) || len(notes) != 0 || !slices.Equal(slices.Compact(progressed), []int{0, 1}) {
		t.Errorf("whatif of ddp_rank0: devices %v, notes %+v, progress for %v", devs, notes, progressed)
	}
}
