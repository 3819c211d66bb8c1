package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// Side is one device of one snapshot at one moment, reduced to what `diff`
// and `ranks` compare: memory_stats() figures, live bytes by allocation
// stack, settings and how the file was recorded. It holds no reference to
// the snapshot or the replay, so that many Sides cost little memory.
type Side struct {
	// File names the snapshot (set by the caller).
	File   string
	Device int
	// At is the trace entry after which the side is taken (-1: before the
	// first entry); Entries the length of the device's trace.
	At, Entries int
	// HasTime is true when the trace has time_us; FirstUS and AtUS are
	// then the first entry's and entry At's (microseconds since the Unix
	// epoch).
	HasTime       bool
	FirstUS, AtUS int64
	// Steps says how the trace was cut into steps (Source StepsSlices or
	// StepsNone: no steps found); Step is the step holding At, -1 when
	// none.
	Steps steps.Steps
	Step  int
	// FirstStepUS is the time_us (microseconds since the Unix epoch) at
	// which the trace's first step (not the prologue) starts, when the
	// trace has time_us and steps from annotations or a repeating
	// allocation (HasFirstStep).
	FirstStepUS  int64
	HasFirstStep bool
	// ShiftUS is how far AlignSteps moved the side's times (FirstUS,
	// AtUS, FirstStepUS and the peaks' times) to line its first step up
	// with the other sides'; 0 when they are the trace's own. Aligned
	// says AlignSteps moved it.
	ShiftUS int64
	Aligned bool
	// Ranges are the record_function ranges (external_annotations) open
	// at entry At's time, outermost first (steps.OpenAt); empty without
	// time_us or annotations.
	Ranges []string

	// Stats are the memory_stats() figures after entry At, with the
	// exactness of the replay ([Result.Stats]).
	Stats stats.MemoryStats

	// PeakAllocated and PeakReserved are the highest allocated and
	// reserved bytes over the whole trace (bytes), after entries
	// PeakAllocatedAt and PeakReservedAt (-1 without a trace: then the
	// figures are the file's state), in steps PeakAllocatedStep and
	// PeakReservedStep (-1 when no steps were found), at times
	// PeakAllocatedUS and PeakReservedUS (time_us, 0 when unknown).
	// ReservedAtPeakAllocated is the reserved bytes at PeakAllocatedAt.
	PeakAllocated, PeakReserved         int64
	PeakAllocatedAt, PeakReservedAt     int
	PeakAllocatedStep, PeakReservedStep int
	PeakAllocatedUS, PeakReservedUS     int64
	ReservedAtPeakAllocated             int64
	// OOMs counts the oom entries of the whole trace.
	OOMs int
	// End are the memory_stats() figures after the last entry: the state
	// the file holds ([Result.Stats]).
	End stats.MemoryStats

	// Stacks are the allocations live after At (allocated, not yet
	// free_requested), grouped by stack key (see [StackKeys]), sorted by
	// key. Their Bytes add up to Stats' allocated_bytes.all.current.
	Stacks []StackTotal

	// Settings is allocator_settings as display strings, sorted by key
	// (empty when the file has none).
	Settings []snapshot.KeyValue
	// Coverage says how much of the run the trace covers; Seeded is
	// [Result.Seeded]; CheckEqual is [EndCheck.Equal].
	Coverage   info.TraceCoverageKind
	Seeded     bool
	CheckEqual bool
	// StacksOption and Context are the inferred recording options
	// (_record_memory_history's stacks and context), Version the hint at
	// the PyTorch release.
	StacksOption info.Stacks
	Context      info.Context
	Version      string
}

// StackTotal is the live allocations of one stack key on one side.
type StackTotal struct {
	// Key is the stack key (see [StackKeys]); "" for allocations
	// recorded without a stack.
	Key string
	// Frames are the key's frames, innermost first.
	Frames []snapshot.Frame
	// Bytes is the sum of the blocks' sizes, Requested of the callers'
	// requested sizes, Count the number of allocations.
	Bytes, Requested int64
	Count            int
}

// SideOptions tunes [MeasureSide].
type SideOptions struct {
	// Full keys stacks by their whole stacks; the default keys them by
	// their user frames ([LeakOptions].Fold, `leaks --fold`).
	Full bool
	// NoSteps skips finding steps (Side.Steps.Source is StepsNone).
	NoSteps bool
	// Recording is the file's, from [NewFileRecording]; nil makes one.
	// A caller measuring several devices or moments of one file makes it
	// once.
	Recording *FileRecording
}

// FileRecording is what a snapshot file shows of how it was recorded, as
// [Inspect] infers it (the recording options, the PyTorch version), made
// once per file for [MeasureSide].
type FileRecording struct {
	rec     info.Recording
	version string
	lengths map[int]int // devices by trace length
}

// NewFileRecording infers how s was recorded. It costs one pass over every
// trace entry.
func NewFileRecording(s *snapshot.Snapshot) *FileRecording {
	fr := &FileRecording{lengths: map[int]int{}}
	var devices []info.DeviceInfo
	for _, d := range s.Devices() {
		n := len(replay.DeviceTrace(s, d))
		di := info.DeviceInfo{Device: d, Entries: n, Coverage: info.CoverageNone}
		if n > 0 {
			di.Coverage = info.CoverageFromStart
			fr.lengths[n]++
		}
		devices = append(devices, di)
	}
	fr.rec = info.ClassifyCoverage(s, devices)
	v := info.InferVersion(s)
	fr.version = v.String()
	return fr
}

// coverage is the Coverage [InspectCoverage] gives device d, from its
// replay: a trace holds the whole run exactly when its replay needs no
// seed (a free without its alloc, or a live block allocated before the
// trace, is what makes the replay seed), so the per-address pass of
// TraceCoverage is spared but where looksWrapped needs its count of
// orphan frees to tell a wrapped trace from a late one.
func (fr *FileRecording) coverage(s *snapshot.Snapshot, d int, seeded bool) info.TraceCoverageKind {
	n := len(replay.DeviceTrace(s, d))
	switch {
	case n == 0:
		return info.CoverageNone
	case fr.rec.Enabled == info.EnabledState && n <= 1:
		return info.CoverageStateOnly
	case !seeded:
		return info.CoverageFromStart
	case fr.rec.Enabled != info.EnabledAll:
		return info.CoverageLate
	}
	di := info.DeviceInfo{Device: d, Entries: n, Coverage: info.CoverageLate}
	if !info.RoundEntries(n) && fr.lengths[n] <= 1 {
		di.OrphanFrees = replay.TraceCoverage(s, d).OrphanFrees
	}
	if ok, _ := info.LooksWrapped(&di, fr.lengths[n]); ok {
		return info.CoverageWrapped
	}
	return info.CoverageLate
}

// MeasureSide reduces device r.Device of s at trace entry at (-1: before
// the first entry) to a Side. r comes from Peaks [replay.Run] (the live
// allocations are then the state's active_allocated blocks, at the cost
// of one more pass over the trace up to at, [Result.StateAt]) or from
// Full [replay.Run] (they come from r.Allocs; a moment other than the last entry
// costs that pass too, for its figures).
func MeasureSide(s *snapshot.Snapshot, r *replay.Result, at int, opts SideOptions) (*Side, error) {
	trace := replay.DeviceTrace(s, r.Device)
	n := len(trace)
	if at < -1 || at >= n {
		return nil, fmt.Errorf("measuring device %d: entry %d out of range [-1, %d)", r.Device, at, n)
	}
	sd := &Side{
		Device: r.Device, At: at, Entries: n, Step: -1,
		PeakAllocatedAt: -1, PeakReservedAt: -1, PeakAllocatedStep: -1, PeakReservedStep: -1,
		OOMs: len(r.OOMs), End: r.Stats, Seeded: r.Seeded, CheckEqual: r.Check.Equal,
		Settings: []snapshot.KeyValue{},
	}
	if s.Settings != nil {
		sd.Settings = append(sd.Settings, s.Settings.Raw...)
	}
	if n > 0 {
		sd.HasTime = trace[0].Flags&snapshot.FlagTime != 0
		sd.FirstUS = trace[0].TimeUS
		if at >= 0 {
			sd.AtUS = trace[at].TimeUS
			if sd.HasTime {
				sd.Ranges = steps.OpenAt(s, r.Device, sd.AtUS, trace[n-1].TimeUS)
			}
		}
	}
	// The figures at the moment, and, without r.Allocs, the blocks
	// live then.
	var st *replay.State
	if at == n-1 && (r.Allocs != nil || n == 0) {
		// Without a trace, the state is the file's segments (read below).
		sd.Stats = r.Stats
	} else {
		var err error
		if st, err = r.StateAt(at); err != nil {
			return nil, err
		}
		sd.Stats = st.Stats
	}
	// Peaks over the whole trace.
	if n > 0 && r.PeakIndex >= 0 {
		pk := r.Peaks()
		sd.PeakAllocatedAt, sd.PeakReservedAt = r.PeakIndex, r.PeakReservedIndex
		sd.PeakAllocated, sd.PeakReserved, sd.ReservedAtPeakAllocated = pk.Allocated, pk.Reserved, pk.ReservedAtAllocated
		if sd.HasTime {
			sd.PeakAllocatedUS = trace[sd.PeakAllocatedAt].TimeUS
			sd.PeakReservedUS = trace[sd.PeakReservedAt].TimeUS
		}
	} else {
		sd.PeakAllocated = r.Stats.AllocatedBytes[stats.PoolAll].Current
		sd.PeakReserved = r.Stats.ReservedBytes[stats.PoolAll].Current
		sd.ReservedAtPeakAllocated = sd.PeakReserved
	}
	if opts.NoSteps || n == 0 {
		sd.Steps.Source = steps.StepsNone
	} else {
		sl, st := steps.FindSteps(s, r, n-1)
		sd.Steps = st
		if st.Source != steps.StepsSlices && st.Source != steps.StepsNone {
			sd.Step = steps.StepOf(sl, at)
			sd.PeakAllocatedStep = steps.StepOf(sl, sd.PeakAllocatedAt)
			sd.PeakReservedStep = steps.StepOf(sl, sd.PeakReservedAt)
			if sd.HasTime {
				sd.FirstStepUS, sd.HasFirstStep = firstStepUS(sl, trace)
			}
		}
	}
	// The live allocations by stack key: allocated, not yet
	// free_requested (Allocation.Alive; active_allocated blocks).
	keys := frames.NewStackKeys(s, !opts.Full)
	byKey := map[string]*StackTotal{}
	add := func(stack snapshot.StackID, size, requested int64) {
		k := keys.Key(stack)
		t := byKey[k]
		if t == nil {
			t = &StackTotal{Key: k, Frames: keys.Frames(stack)}
			byKey[k] = t
		}
		t.Bytes += size
		t.Requested += requested
		t.Count++
	}
	switch {
	case n == 0:
		sd.Stacks = fileStackTotals(s, r.Device, keys)
	case st != nil:
		for _, sg := range st.Segments {
			for _, b := range sg.Blocks {
				if b.State == snapshot.StateActiveAllocated {
					add(b.Stack, b.Size, b.Requested)
				}
			}
		}
	default:
		for ai := range r.Allocs {
			a := &r.Allocs[ai]
			if a.AllocIndex > at {
				break // Allocs are in trace order after the seeded ones
			}
			if a.Alive(at) {
				add(a.Stack, a.Size, a.Requested)
			}
		}
	}
	if n > 0 {
		sd.Stacks = make([]StackTotal, 0, len(byKey))
		for _, t := range byKey {
			sd.Stacks = append(sd.Stacks, *t)
		}
		slices.SortFunc(sd.Stacks, func(a, b StackTotal) int { return strings.Compare(a.Key, b.Key) })
	}
	// How the file was recorded.
	fr := opts.Recording
	if fr == nil {
		fr = NewFileRecording(s)
	}
	sd.Coverage = fr.coverage(s, r.Device, r.Seeded)
	sd.StacksOption, sd.Context, sd.Version = fr.rec.Stacks, fr.rec.Context, fr.version
	return sd, nil
}

// firstStepUS is the time_us of the first entry of the first step of sl
// (not the prologue) in trace; ok is false when sl has no step.
func firstStepUS(sl []steps.LeakSlice, trace []snapshot.TraceEntry) (us int64, ok bool) {
	for _, x := range sl {
		if x.Step > 0 {
			return trace[x.Start].TimeUS, true
		}
	}
	return 0, false
}

// MeasureFileState is [MeasureSide] for a device without trace entries:
// the state the file holds, read from its segments with no replay
// ([CurrentStats]: the current figures exact, the history ones unknown),
// as `summary` reads it. The peaks are the current figures.
func MeasureFileState(s *snapshot.Snapshot, device int, opts SideOptions) *Side {
	st := stats.CurrentStats(s, device)
	sd := &Side{
		Device: device, At: -1, Step: -1, Stats: *st, End: *st,
		PeakAllocatedAt: -1, PeakReservedAt: -1, PeakAllocatedStep: -1, PeakReservedStep: -1,
		PeakAllocated: st.AllocatedBytes[stats.PoolAll].Current, PeakReserved: st.ReservedBytes[stats.PoolAll].Current,
		ReservedAtPeakAllocated: st.ReservedBytes[stats.PoolAll].Current,
		Steps:                   steps.Steps{Source: steps.StepsNone}, CheckEqual: true, Coverage: info.CoverageNone,
		Settings: []snapshot.KeyValue{},
	}
	if s.Settings != nil {
		sd.Settings = append(sd.Settings, s.Settings.Raw...)
	}
	fr := opts.Recording
	if fr == nil {
		fr = NewFileRecording(s)
	}
	sd.StacksOption, sd.Context, sd.Version = fr.rec.Stacks, fr.rec.Context, fr.version
	sd.Stacks = fileStackTotals(s, device, frames.NewStackKeys(s, !opts.Full))
	return sd
}

// fileStackTotals groups the active_allocated blocks of device's segments
// in the file by stack key, sorted by key.
func fileStackTotals(s *snapshot.Snapshot, device int, keys *frames.StackKeys) []StackTotal {
	byKey := map[string]*StackTotal{}
	for i := range s.Segments {
		sg := &s.Segments[i]
		if sg.Device != device {
			continue
		}
		for _, b := range sg.Blocks {
			if b.State != snapshot.StateActiveAllocated {
				continue
			}
			k := keys.Key(b.Stack)
			t := byKey[k]
			if t == nil {
				t = &StackTotal{Key: k, Frames: keys.Frames(b.Stack)}
				byKey[k] = t
			}
			t.Bytes += b.Size
			t.Requested += b.RequestedSize
			t.Count++
		}
	}
	out := make([]StackTotal, 0, len(byKey))
	for _, t := range byKey {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b StackTotal) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// StackStatus says how a stack's live bytes changed from base to new.
type StackStatus string

const (
	StackNew    StackStatus = "new"    // live on the new side only
	StackGone   StackStatus = "gone"   // live on the base side only
	StackGrown  StackStatus = "grown"  // more bytes on the new side
	StackShrunk StackStatus = "shrunk" // fewer bytes on the new side
	StackSame   StackStatus = "same"   // the same bytes on both sides
)

// Diff is the comparison of two Sides, base and new, as `snapview diff`
// shows it.
type Diff struct {
	Base, New *Side
	// Settings are the allocator_settings that differ, by key ("" where
	// a side lacks the key).
	Settings []SettingDiff
	// Figures are memory_stats() figures side by side.
	Figures []FigureDiff
	// Recording are the differences in how the files were recorded.
	Recording []RecordingDiff
	// Stacks are every stack key live on either side, sorted by |delta|,
	// then key. Their base and new bytes add up to each side's
	// allocated_bytes.all.current.
	Stacks []StackDiff
	// SameAllocations is true when every stack has the same count and
	// requested bytes on both sides (the same program reached the same
	// point); never when a side's requested sizes are unknown
	// (Known.Requested).
	SameAllocations bool
	// Notes are one-line explanations the data supports.
	Notes []string
}

// SettingDiff is one allocator setting that differs.
type SettingDiff struct{ Key, Base, New string }

// RecordingDiff is one way the two recordings differ: What is
// "coverage", "stacks", "context", "torch version" or "end state".
type RecordingDiff struct{ What, Base, New string }

// FigureDiff is one memory_stats() figure on both sides. Name is its
// memory_stats() key, or "reserved_minus_allocated_bytes.all.current"
// for reserved_bytes minus allocated_bytes (the memory cached but not
// allocated). Exactness covers both sides: Exact when both are exact,
// Unknown when either is unknown, LowerBound otherwise (then Delta is the
// difference of the bounds, which bounds nothing).
type FigureDiff struct {
	Name          string
	Base, New     int64
	Delta         int64
	Exactness     stats.Exactness
	BaseExactness stats.Exactness
	NewExactness  stats.Exactness
	Bytes         bool // a byte figure (else a count)
}

// StackDiff is one stack key on both sides.
type StackDiff struct {
	Key                         string
	Frames                      []snapshot.Frame
	BaseBytes, NewBytes         int64
	DeltaBytes                  int64
	BaseRequested, NewRequested int64
	BaseCount, NewCount         int
	Status                      StackStatus
}

// diffFigures are the figures a Diff compares, in order.
var diffFigures = []struct {
	name  string
	bytes bool
	get   func(s *stats.MemoryStats) (int64, stats.Exactness)
}{
	{"allocated_bytes.all.current", true, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.AllocatedBytes[stats.PoolAll].Current, s.Known.Current
	}},
	{"reserved_bytes.all.current", true, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.ReservedBytes[stats.PoolAll].Current, s.Known.Current
	}},
	{"active_bytes.all.current", true, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.ActiveBytes[stats.PoolAll].Current, s.Known.Current
	}},
	{"requested_bytes.all.current", true, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.RequestedBytes[stats.PoolAll].Current, s.Known.RequestedCurrent()
	}},
	{"reserved_minus_allocated_bytes.all.current", true, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.ReservedBytes[stats.PoolAll].Current - s.AllocatedBytes[stats.PoolAll].Current, s.Known.Current
	}},
	{"allocation.all.current", false, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.Allocation[stats.PoolAll].Current, s.Known.Current
	}},
	{"segment.all.current", false, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.Segment[stats.PoolAll].Current, s.Known.Current
	}},
	{"allocated_bytes.all.peak", true, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.AllocatedBytes[stats.PoolAll].Peak, s.Known.History
	}},
	{"reserved_bytes.all.peak", true, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.ReservedBytes[stats.PoolAll].Peak, s.Known.History
	}},
	{"num_ooms", false, func(s *stats.MemoryStats) (int64, stats.Exactness) { return s.NumOOMs, s.Known.NumOOMs }},
	{"num_alloc_retries", false, func(s *stats.MemoryStats) (int64, stats.Exactness) {
		return s.NumAllocRetries, s.Known.NumAllocRetries
	}},
}

// bothExact combines the exactness of two figures.
func bothExact(a, b stats.Exactness) stats.Exactness {
	switch {
	case a == stats.Unknown || b == stats.Unknown:
		return stats.Unknown
	case a == stats.Exact && b == stats.Exact:
		return stats.Exact
	}
	return stats.LowerBound
}

// Compare compares two Sides: settings, figures, recording, and the live
// bytes of every stack key, matched by key (never by address).
func Compare(base, new *Side) *Diff {
	d := &Diff{Base: base, New: new, Settings: []SettingDiff{}, Recording: []RecordingDiff{}, Notes: []string{}}
	d.Settings = diffSettings(base.Settings, new.Settings)
	for _, f := range diffFigures {
		b, be := f.get(&base.Stats)
		n, ne := f.get(&new.Stats)
		d.Figures = append(d.Figures, FigureDiff{
			Name: f.name, Base: b, New: n, Delta: n - b, Bytes: f.bytes,
			Exactness: bothExact(be, ne), BaseExactness: be, NewExactness: ne,
		})
	}
	// torch's own peaks (memory_stats() .peak after the last entry): the
	// .peak rows above are the peaks up to each side's moment.
	for _, f := range []struct {
		name string
		get  func(s *stats.MemoryStats) int64
	}{
		{"allocated_bytes.all.peak (whole trace)", func(s *stats.MemoryStats) int64 { return s.AllocatedBytes[stats.PoolAll].Peak }},
		{"reserved_bytes.all.peak (whole trace)", func(s *stats.MemoryStats) int64 { return s.ReservedBytes[stats.PoolAll].Peak }},
	} {
		b, n := f.get(&base.End), f.get(&new.End)
		be, ne := base.End.Known.History, new.End.Known.History
		d.Figures = append(d.Figures, FigureDiff{
			Name: f.name, Base: b, New: n, Delta: n - b, Bytes: true,
			Exactness: bothExact(be, ne), BaseExactness: be, NewExactness: ne,
		})
	}
	rec := func(what, b, n string) {
		if b != n {
			d.Recording = append(d.Recording, RecordingDiff{What: what, Base: b, New: n})
		}
	}
	rec("coverage", string(base.Coverage), string(new.Coverage))
	rec("stacks", string(base.StacksOption), string(new.StacksOption))
	rec("context", string(base.Context), string(new.Context))
	rec("torch version", base.Version, new.Version)
	endState := func(s *Side) string {
		if s.CheckEqual {
			return "replay matches the file"
		}
		return "replay differs from the file"
	}
	rec("end state", endState(base), endState(new))
	d.Stacks = DiffStacks(base.Stacks, new.Stacks)
	d.SameAllocations = len(d.Stacks) > 0 && base.Stats.Known.Requested == stats.Exact && new.Stats.Known.Requested == stats.Exact
	for _, s := range d.Stacks {
		if s.BaseCount != s.NewCount || s.BaseRequested != s.NewRequested {
			d.SameAllocations = false
			break
		}
	}
	d.Notes = diffNotes(d)
	return d
}

// DiffStacks matches two sides' stack totals (each sorted by key) by key
// and returns every key of either, sorted by |delta bytes| (largest
// first), then key.
func DiffStacks(base, new []StackTotal) []StackDiff {
	out := make([]StackDiff, 0, max(len(base), len(new)))
	i, j := 0, 0
	for i < len(base) || j < len(new) {
		var sd StackDiff
		switch {
		case j >= len(new) || i < len(base) && base[i].Key < new[j].Key:
			b := &base[i]
			sd = StackDiff{Key: b.Key, Frames: b.Frames, BaseBytes: b.Bytes, BaseRequested: b.Requested, BaseCount: b.Count}
			i++
		case i >= len(base) || new[j].Key < base[i].Key:
			n := &new[j]
			sd = StackDiff{Key: n.Key, Frames: n.Frames, NewBytes: n.Bytes, NewRequested: n.Requested, NewCount: n.Count}
			j++
		default:
			b, n := &base[i], &new[j]
			sd = StackDiff{
				Key: b.Key, Frames: n.Frames, BaseBytes: b.Bytes, NewBytes: n.Bytes,
				BaseRequested: b.Requested, NewRequested: n.Requested, BaseCount: b.Count, NewCount: n.Count,
			}
			i++
			j++
		}
		sd.DeltaBytes = sd.NewBytes - sd.BaseBytes
		switch {
		case sd.BaseCount == 0:
			sd.Status = StackNew
		case sd.NewCount == 0:
			sd.Status = StackGone
		case sd.DeltaBytes > 0:
			sd.Status = StackGrown
		case sd.DeltaBytes < 0:
			sd.Status = StackShrunk
		default:
			sd.Status = StackSame
		}
		out = append(out, sd)
	}
	slices.SortStableFunc(out, func(a, b StackDiff) int {
		if c := cmp.Compare(abs64(b.DeltaBytes), abs64(a.DeltaBytes)); c != 0 {
			return c
		}
		return cmp.Compare(max(b.BaseBytes, b.NewBytes), max(a.BaseBytes, a.NewBytes))
	})
	return out
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// diffSettings returns the settings whose values differ, by key.
func diffSettings(base, new []snapshot.KeyValue) []SettingDiff {
	bm, nm := map[string]string{}, map[string]string{}
	var keys []string
	for _, kv := range base {
		bm[kv.Key] = kv.Value
		keys = append(keys, kv.Key)
	}
	for _, kv := range new {
		nm[kv.Key] = kv.Value
		if _, ok := bm[kv.Key]; !ok {
			keys = append(keys, kv.Key)
		}
	}
	slices.Sort(keys)
	out := []SettingDiff{}
	for _, k := range keys {
		if bm[k] != nm[k] {
			out = append(out, SettingDiff{Key: k, Base: bm[k], New: nm[k]})
		}
	}
	return out
}

// figure returns the FigureDiff named name.
func (d *Diff) figure(name string) FigureDiff {
	for _, f := range d.Figures {
		if f.Name == name {
			return f
		}
	}
	return FigureDiff{Name: name}
}

// diffNotes explains what the data shows: one line each.
func diffNotes(d *Diff) []string {
	var notes []string
	alloc := d.figure("allocated_bytes.all.current")
	res := d.figure("reserved_bytes.all.current")
	free := d.figure("reserved_minus_allocated_bytes.all.current")
	settings := func() string {
		keys := make([]string, len(d.Settings))
		for i, s := range d.Settings {
			keys[i] = s.Key
		}
		return strings.Join(keys, ", ")
	}
	switch {
	case d.SameAllocations && res.Delta != 0 && len(d.Settings) > 0:
		notes = append(notes, fmt.Sprintf("same allocations, reserved %s: the setting (%s)", units.SignedBytes(res.Delta), settings()))
	case d.SameAllocations && res.Delta != 0:
		notes = append(notes, fmt.Sprintf("same allocations, reserved %s with the same settings: the allocator's history (what it cached and split), not the program", units.SignedBytes(res.Delta)))
	case d.SameAllocations:
		notes = append(notes, "same allocations: every stack has the same count and requested bytes on both sides")
	}
	if d.SameAllocations && alloc.Delta != 0 {
		notes = append(notes, fmt.Sprintf("allocated %s for the same requests: block rounding and the remainders the allocator left unsplit", units.SignedBytes(alloc.Delta)))
	}
	if !d.SameAllocations && alloc.Delta != 0 && len(d.Stacks) > 0 {
		top := d.Stacks[0]
		switch share := float64(top.DeltaBytes) / float64(alloc.Delta); {
		case share > 1:
			notes = append(notes, fmt.Sprintf("one stack changed by more than the whole allocated change (%s): %s, %s %s",
				units.SignedBytes(alloc.Delta), stackLabel(top.Frames), top.Status, units.SignedBytes(top.DeltaBytes)))
		case share >= 0.5:
			notes = append(notes, fmt.Sprintf("%.0f%% of the allocated change (%s) is one stack's: %s, %s %s",
				100*share, units.SignedBytes(alloc.Delta), stackLabel(top.Frames), top.Status, units.SignedBytes(top.DeltaBytes)))
		}
		var nNew, nGone int
		var bNew, bGone int64
		for _, s := range d.Stacks {
			switch s.Status {
			case StackNew:
				nNew++
				bNew += s.NewBytes
			case StackGone:
				nGone++
				bGone += s.BaseBytes
			}
		}
		var parts []string
		if nNew > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", units.Count(nNew, "new stack holds", "new stacks hold"), units.Bytes(bNew)))
		}
		if nGone > 0 {
			parts = append(parts, fmt.Sprintf("%s held %s", units.Count(nGone, "stack gone", "stacks gone"), units.Bytes(bGone)))
		}
		if len(parts) > 0 {
			notes = append(notes, strings.Join(parts, "; "))
		}
	}
	if !d.SameAllocations && res.New > 0 && abs64(free.Delta) > res.New/10 && abs64(free.Delta) > abs64(alloc.Delta) {
		notes = append(notes, fmt.Sprintf("reserved but not allocated %s: more of the change is cached free memory (fragmentation, blocks kept for reuse) than live tensors", units.SignedBytes(free.Delta)))
	}
	if o := d.figure("num_ooms"); o.Delta != 0 {
		notes = append(notes, fmt.Sprintf("OOMs: %d in base, %d in new", o.Base, o.New))
	}
	for _, side := range []struct {
		name string
		k    stats.Known
	}{{"base", d.Base.Stats.Known}, {"new", d.New.Stats.Known}} {
		if side.k.Requested == stats.Unknown {
			notes = append(notes, fmt.Sprintf("the requested sizes of %s are unknown: %s", side.name, side.k.RequestedWhy))
		}
	}
	for _, r := range d.Recording {
		if r.What == "coverage" {
			notes = append(notes, fmt.Sprintf("the recordings differ in coverage (%s vs %s): peaks and totals of a trace that misses the start are lower bounds", r.Base, r.New))
		}
	}
	if (d.Base.File != d.New.File || d.Base.Device != d.New.Device) && d.Base.Step >= 0 && d.New.Step >= 0 && d.Base.Step != d.New.Step {
		notes = append(notes, fmt.Sprintf("the two moments fall in different steps (%d and %d): a per-step working set may differ by where in the step each side was taken", d.Base.Step, d.New.Step))
	}
	if d.Base.File == d.New.File && d.Base.Device == d.New.Device && d.Base.At > d.New.At {
		notes = append(notes, "the base moment comes after the new one: deltas read backwards in time")
	}
	return notes
}

// stackLabel names a stack by its innermost key frame ("file.py:12 name"),
// "<no stack recorded>" for the empty key.
func stackLabel(frames []snapshot.Frame) string {
	if len(frames) == 0 {
		return "<no stack recorded>"
	}
	f := frames[0]
	fn := f.Filename
	if i := strings.LastIndexAny(fn, `/\`); i >= 0 {
		fn = fn[i+1:]
	}
	return fmt.Sprintf("%s:%d %s", fn, f.Line, f.Name)
}
