package check

import (
	"fmt"
	"slices"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// Inputs are one file's inputs to the checks, device by device: a
// snapshot's ([SnapshotInputs]) or a memory_stats() log's ([LogInputs]).
type Inputs struct {
	// Name is the file as messages name it.
	Name    string
	Devices []Input
	// Traces are the traces of the devices whose trace holds every
	// request from the start (stats.Exact history), for [SameRequests].
	Traces map[int][]snapshot.TraceEntry
}

// LogInputs are the inputs of a memory_stats() log's or dump's devices
// (monitor.AnalyzeSteps, the devices to check): each device's last record,
// whose figures are all exact. A log has no allocation stacks, so its
// leaks are unknown.
func LogInputs(name string, devices []monitor.StepsDevice) *Inputs {
	in := &Inputs{Name: name, Traces: map[int][]snapshot.TraceEntry{}}
	for _, d := range devices {
		st := d.Records[len(d.Records)-1].Stats
		in.Devices = append(in.Devices, Input{Device: d.Device, Figures: FiguresOf(st),
			LeaksWhy: "a memory_stats() log has no allocation stacks: take a snapshot to judge leaks"})
	}
	return in
}

// SnapshotOptions say what [SnapshotInputs] reads of a snapshot.
type SnapshotOptions struct {
	// Devices are the devices to check; Picked says the user named them
	// (--device). Otherwise the devices that hold only a lone snapshot
	// entry (a distributed process's file lists the other ranks'
	// devices so: snapshot.IdleDevices) are left out.
	Devices []int
	Picked  bool
	// Leaks asks for the leak verdicts (a full replay of each device).
	Leaks bool
	// Where names an allocation stack in a leak's line (report/stacks'
	// Where: how stacks are written is the views' to say).
	Where func(*snapshot.Snapshot, snapshot.StackID) string
}

// SnapshotInputs are the inputs of s's devices: the figures summary
// prints (analysis.File.Stats), and the leaks `snapview leaks` judges
// "likely leak" by default when o.Leaks is set. Each device is replayed
// once and forgotten before the next. notes are the replay's warnings; the
// error is the leak ranking's.
func SnapshotInputs(s *snapshot.Snapshot, name string, o SnapshotOptions) (*Inputs, []analysis.Note, error) {
	in := &Inputs{Name: name, Traces: map[int][]snapshot.TraceEntry{}}
	devices := o.Devices
	if !o.Picked {
		idle := s.IdleDevices()
		devices = slices.DeleteFunc(slices.Clone(devices), func(x int) bool { return slices.Contains(idle, x) })
	}
	// A Full replay's figures are a StatsOnly replay's.
	mode := replay.StatsOnly
	if o.Leaks {
		mode = replay.Full
	}
	an := analysis.New(s, analysis.Options{Mode: mode})
	var notes []analysis.Note
	for _, d := range devices {
		st, warns := an.Stats(d)
		for _, w := range warns {
			notes = append(notes, analysis.Note{Kind: analysis.Warning, Text: w})
		}
		ci := Input{Device: d, Figures: FiguresOf(st)}
		if st.Known.History == stats.Exact && an.HasTrace(d) {
			in.Traces[d] = s.Traces[d]
		}
		if o.Leaks {
			if err := judgeLeaks(an, d, &ci, o.Where); err != nil {
				return nil, notes, err
			}
		}
		an.Forget(d) // one device at a time
		in.Devices = append(in.Devices, ci)
	}
	return in, notes, nil
}

// judgeLeaks fills in's leak verdicts as snapview leaks gives them by
// default: the stacks whose verdict is "likely leak" (growing every step,
// never freed; or freed only in bursts, as reference cycles left to gc).
// Where such stacks grew over steps that cannot judge growth (equal
// slices, a few repetitions of one allocation: steps.Steps.JudgesGrowth)
// the verdict is unknown, as explain's growth-unjudged finding says.
func judgeLeaks(an *analysis.File, d int, in *Input, where func(*snapshot.Snapshot, snapshot.StackID) string) error {
	if !an.HasTrace(d) {
		in.LeaksWhy = "no trace: leaks cannot be judged (record with _record_memory_history)"
		return nil
	}
	r, err := an.Replay(d)
	if err != nil {
		in.LeaksWhy = err.Error()
		return nil
	}
	rep, err := an.Leaks(d, leaks.DefaultLeakOptions(r))
	if err != nil {
		return err
	}
	in.LeaksKnown = true
	grew := 0
	for _, g := range rep.Groups {
		if k := g.Verdict.Kind; k == leaks.VerdictLeak || k == leaks.VerdictSawtooth {
			grew++
			if rep.Steps.JudgesGrowth() {
				in.Leaks = append(in.Leaks, Leak{Where: where(an.Snap, g.Stack), Verdict: g.Verdict.String(), Bytes: g.Bytes})
			}
		}
	}
	if grew > 0 && !rep.Steps.JudgesGrowth() {
		// As explain's growth-unjudged finding: growth over equal slices
		// of the trace, or over a few repetitions of one allocation, is
		// what one long step (a forward pass) does too.
		cut := fmt.Sprintf("no training steps found (%d equal slices)", rep.Steps.Count)
		if rep.Steps.TooFewPatternSteps() {
			cut = fmt.Sprintf("only %d steps, from one repeating allocation", rep.Steps.Count)
		}
		in.LeaksKnown = false
		in.LeaksWhy = fmt.Sprintf("%d stacks grew, but growth cannot be judged: %s, and one long step (a forward pass) grows as well; mark steps with record_function",
			grew, cut)
	}
	return nil
}

// RunAll runs rules on every device of run, each against its device of
// base (nil: no baseline; see [Pairs]); a baseline device's figures are
// compared on the same requests when both traces hold every request.
// notes say which devices of other ordinals were paired. The error is a
// *analysis.UsageError: base has no device to pair, or a rule cannot be
// judged ([Run]'s error).
func RunAll(rules []Rule, run, base *Inputs) ([]Result, []analysis.Note, error) {
	pairs, err := Pairs(run, base)
	if err != nil {
		return nil, nil, err
	}
	var out []Result
	var notes []analysis.Note
	for i, in := range run.Devices {
		var b *Baseline
		if base != nil {
			bd := base.Devices[pairs[i]].Device
			if in.Device != bd {
				notes = append(notes, analysis.Note{Kind: analysis.Info, Text: fmt.Sprintf(
					"device %d of %s is checked against device %d of %s: each file used one device", in.Device, run.Name, bd, base.Name)})
			}
			b = &Baseline{Figures: base.Devices[pairs[i]].Figures}
			ta, okA := run.Traces[in.Device]
			tb, okB := base.Traces[bd]
			if okA && okB {
				b.Known, b.SameRequests = true, SameRequests(ta, tb)
			}
		}
		res, err := Run(rules, in, b)
		if err != nil {
			return nil, notes, &analysis.UsageError{Msg: err.Error()}
		}
		out = append(out, res...)
	}
	return out, notes, nil
}

// Pairs returns, for each device of run, the index of its baseline device
// in base: the same ordinal, or, when each file used a single device (the
// ranks of a distributed run, each on its own GPU), that one. nil without
// a baseline; a *analysis.UsageError naming both files' devices when base
// lacks one.
func Pairs(run, base *Inputs) ([]int, error) {
	if base == nil {
		return nil, nil
	}
	if len(run.Devices) == 1 && len(base.Devices) == 1 {
		return []int{0}, nil
	}
	ords := func(in *Inputs) []int {
		var out []int
		for _, d := range in.Devices {
			out = append(out, d.Device)
		}
		return out
	}
	pairs := make([]int, len(run.Devices))
	for i, in := range run.Devices {
		pairs[i] = slices.IndexFunc(base.Devices, func(d Input) bool { return d.Device == in.Device })
		if pairs[i] < 0 {
			return nil, analysis.UsageErrorf("--baseline %s has no device %d (its devices: %s; %s's: %s): give --device N",
				base.Name, in.Device, units.IntList(ords(base)), run.Name, units.IntList(ords(run)))
		}
	}
	return pairs, nil
}
