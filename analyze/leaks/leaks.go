package leaks

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// LeakSort is the order of the groups of a [LeakReport].
type LeakSort uint8

const (
	// LeakSortScore ranks by leak score (see [Leaks]), then live bytes.
	LeakSortScore LeakSort = iota
	// LeakSortBytes ranks by live bytes.
	LeakSortBytes
	// LeakSortCount ranks by the number of live allocations.
	LeakSortCount
)

// String returns the --sort spelling of o.
func (o LeakSort) String() string {
	switch o {
	case LeakSortBytes:
		return "bytes"
	case LeakSortCount:
		return "count"
	}
	return "score"
}

// ParseLeakSort parses "score", "bytes" or "count".
func ParseLeakSort(s string) (LeakSort, error) {
	for _, o := range []LeakSort{LeakSortScore, LeakSortBytes, LeakSortCount} {
		if s == o.String() {
			return o, nil
		}
	}
	return 0, fmt.Errorf("unknown sort %q: want score, bytes or count", s)
}

// LeakOptions tunes [Leaks]. Start from [DefaultLeakOptions].
type LeakOptions struct {
	// At is the trace entry after which the live allocations are taken
	// (-1: before the first entry, the only choice without a trace).
	At int
	// Fold groups by the user frames of each stack only (frames inside
	// torch/, the standard library and C++ dropped), merging stacks that
	// differ only inside PyTorch. A stack without user frames keeps its
	// whole stack as key. The default key is the whole stack.
	Fold bool
	// ByAnnotation groups by annotation label instead of stack: the
	// user_metadata of the annotate entries made on each allocation up to
	// At (torch.cuda.memory._annotate_tensor, joined by
	// [replay.AnnotationLabel]); allocations without one form one group
	// of label "".
	ByAnnotation bool
	// ByRegion groups by compiled region instead of stack: the
	// compile_context of each allocation's alloc entry when it names a
	// torch.compile region ("Torch-Compiled Region: 0/1", recorded with
	// _record_memory_history(compile_context=True)); allocations outside
	// any region (or older than the trace) form one group of label "".
	// ByAnnotation wins when both are set.
	ByRegion bool
	// MinBytes leaves out groups with fewer live bytes.
	MinBytes int64
	// Focus keeps only allocations whose stack has a frame matching it;
	// Ignore drops allocations whose stack has a frame matching it. Frames
	// are matched as "filename:line name" ([FrameText]). Nil matches
	// nothing (no filter).
	Focus, Ignore *regexp.Regexp
	// Sort orders the groups.
	Sort LeakSort
	// Top is how many groups the report keeps; 0 keeps all.
	Top int
	// Steps chooses how the trace is cut into steps.
	Steps steps.StepSource
	// Slices is the number of equal slices when no steps are found (20
	// when 0).
	Slices int
}

// DefaultLeakOptions returns the options `snapview leaks` uses without
// flags for res: the moment of [DefaultLeakMoment], the top 10 groups by
// score, whole stacks as keys, steps found automatically.
func DefaultLeakOptions(res *replay.Result) LeakOptions {
	return LeakOptions{At: DefaultLeakMoment(res), Top: 10, Slices: 20}
}

// DefaultLeakMoment returns the entry after which leaks are looked for by
// default: the last oom entry when allocated memory is lower at the end
// of the trace than at that OOM (the frees after it are the exception
// unwinding, not the program giving memory back), else the last entry;
// -1 without a trace.
func DefaultLeakMoment(res *replay.Result) int {
	n := len(res.Allocated)
	if n == 0 {
		return -1
	}
	if k := len(res.OOMs); k > 0 {
		if o := res.OOMs[k-1]; res.Allocated[n-1] < res.Allocated[o] {
			return o
		}
	}
	return n - 1
}

// LeakReport is what [Leaks] finds on one device.
type LeakReport struct {
	Device int
	// At is the entry after which live allocations were taken (-1: before
	// the first entry); Entries is the length of the device's trace.
	At, Entries int
	// HasTime is true when the trace has time_us; FirstUS and AtUS are
	// then the first entry's and entry At's time_us (microseconds since
	// the Unix epoch).
	HasTime       bool
	FirstUS, AtUS int64
	// Seeded is [Result.Seeded]: the trace misses the start of the run, so
	// some live allocations are older than the trace.
	Seeded bool
	// History is the replay's trust (Result.Stats.Known, DecideTrust):
	// when not Exact, growth and allocation times are marked.
	History stats.Known
	// LiveBytes and LiveCount are every allocation live after At (not yet
	// free_requested), before any filter. NoStackBytes and NoStackCount
	// are those of them without a recorded stack.
	LiveBytes, NoStackBytes int64
	LiveCount, NoStackCount int
	// FramesKey is true when some trace entry has a frames key: stacks
	// were recorded on trace entries (context "alloc" or "all").
	FramesKey bool
	// LastOOM is the last oom entry of the whole trace, -1 when none;
	// OOMAllocated, AtAllocated and EndAllocated are the allocated bytes
	// after it, after At and after the last entry.
	LastOOM                                 int
	OOMAllocated, AtAllocated, EndAllocated int64
	// TraceAllocs counts the allocations made in the trace up to At, and
	// FreedShare the share of them freed by At. Well under half suggests
	// the trace covers less than one training step (an OOM in the first
	// forward pass).
	TraceAllocs int
	FreedShare  float64
	// Fold is LeakOptions.Fold: groups are keyed by user frames.
	Fold bool
	// ByAnnotation is LeakOptions.ByAnnotation: groups are keyed by
	// annotation label (LeakGroup.Label).
	ByAnnotation bool
	// ByRegion is LeakOptions.ByRegion (and not ByAnnotation): groups are
	// keyed by compiled region (LeakGroup.Label).
	ByRegion bool
	// Steps says how the trace up to At was cut; Slices are the pieces,
	// in order, covering entries 0 to At.
	Steps  steps.Steps
	Slices []steps.LeakSlice
	// Groups are the groups kept, in rank order; TotalGroups counts every
	// group that passed the filters (Focus, Ignore, MinBytes) before Top
	// cut them, and TotalBytes and TotalCount their live bytes and
	// allocations.
	Groups      []LeakGroup
	TotalGroups int
	TotalBytes  int64
	TotalCount  int
}

// LeakGroup is the live allocations of one allocation stack (or, with
// Fold, of the stacks sharing their user frames).
type LeakGroup struct {
	// Rank is the group's place in the report, from 1.
	Rank int
	// Score is the leak score in bytes (see [Leaks]).
	Score float64
	// Bytes and Count are the group's live allocations after At.
	Bytes int64
	Count int
	// Stack is the group's stack holding the most live bytes; Stacks is
	// the number of distinct stacks in the group (1 unless Fold).
	Stack  snapshot.StackID
	Stacks int
	// BeforeTrace and BeforeTraceBytes are the live allocations older
	// than the trace.
	BeforeTrace      int
	BeforeTraceBytes int64
	// MinSize and MaxSize are the smallest and largest live allocation,
	// bytes.
	MinSize, MaxSize int64
	// FirstAlloc and LastAlloc are the alloc entries of the oldest and
	// newest live allocation (-1: older than the trace); FirstAllocUS and
	// LastAllocUS their time_us, 0 when unknown.
	FirstAlloc, LastAlloc     int
	FirstAllocUS, LastAllocUS int64
	// Growth has one point per slice of the report: the group's live
	// bytes and count at the slice's end, counting every allocation of
	// the group (the ones freed later too).
	Growth []GrowthPoint
	// Window is the first slice of the growth window: the slice of the
	// group's first allocation, or of its last burst of frees (a slice
	// whose end finds at most half the live bytes of the one before) that
	// cleared it (nearly all of the live bytes were allocated after it).
	// Bursts counts the bursts up to that one.
	Window, Bursts int
	// WindowBytes is the live bytes allocated inside the window;
	// GrowthSteps the number of slices of the window in which they were
	// allocated; Steadiness how evenly (0 to 1).
	WindowBytes int64
	GrowthSteps int
	Steadiness  float64
	Verdict     Verdict
	// Regions are the compiled regions (the compile_context of the alloc
	// entries, "Torch-Compiled Region: 0/1", recorded with
	// compile_context=True) the group's live bytes were allocated in, most
	// bytes first; empty when none was (eager code, or not recorded).
	Regions []RegionBytes
	// Annotations are the group's live bytes by annotation label (the
	// user_metadata of the annotate entries made on each allocation up to
	// At, torch.cuda.memory._annotate_tensor, joined by
	// [replay.AnnotationLabel]), most bytes first; empty when no live
	// allocation of the group was annotated.
	Annotations []AnnotationBytes
	// Label is the group's annotation label with ByAnnotation, its
	// compiled region with ByRegion ("" for the allocations without one).
	Label string
}

// AnnotationBytes is a group's live bytes carrying one annotation label.
type AnnotationBytes struct {
	Label string
	Bytes int64
	Count int
}

// GrowthPoint is a group's state at the end of one slice.
type GrowthPoint struct {
	// Bytes and Count are live at the slice's end.
	Bytes int64
	Count int
	// Allocs and Frees are the group's allocations made and freed
	// (free_requested) inside the slice.
	Allocs, Frees int
}

// VerdictKind classifies a group's history.
type VerdictKind uint8

// Verdict kinds, from most to least suspicious.
const (
	// VerdictLeak: live bytes came steadily over the steps and stay.
	VerdictLeak VerdictKind = iota
	// VerdictSawtooth: steady growth since the last burst of frees: the
	// memory is released only in bursts (reference cycles left to gc).
	VerdictSawtooth
	// VerdictPossible: growth over several steps, not steady enough to be
	// sure.
	VerdictPossible
	// VerdictUneven: kept allocations from several steps, in no pattern.
	VerdictUneven
	// VerdictBounded: the live bytes stopped growing (a bounded cache, a
	// warm-up).
	VerdictBounded
	// VerdictReused: allocated and freed in (nearly) every step, the live
	// bytes at the end of each step flat: a per-step working set.
	VerdictReused
	// VerdictAtStart: allocated in the first steps of the trace (or before
	// the first one) and kept: parameters and optimizer state when never
	// freed, caches filled early.
	VerdictAtStart
	// VerdictOneOff: allocated in one step later on and kept.
	VerdictOneOff
	// VerdictInFlight: allocated in the last step: in use at the moment.
	VerdictInFlight
	// VerdictFewSteps: the trace has too few steps to see growth.
	VerdictFewSteps
	// VerdictBeforeTrace: alive before the trace began.
	VerdictBeforeTrace
	// VerdictNoHistory: the device has no trace.
	VerdictNoHistory
)

// String returns a stable identifier of the kind, for JSON.
func (k VerdictKind) String() string {
	switch k {
	case VerdictLeak:
		return "leak"
	case VerdictSawtooth:
		return "sawtooth"
	case VerdictPossible:
		return "possible-leak"
	case VerdictUneven:
		return "uneven"
	case VerdictBounded:
		return "bounded"
	case VerdictReused:
		return "reused"
	case VerdictAtStart:
		return "at-start"
	case VerdictOneOff:
		return "one-off"
	case VerdictInFlight:
		return "in-flight"
	case VerdictFewSteps:
		return "few-steps"
	case VerdictBeforeTrace:
		return "before-trace"
	case VerdictNoHistory:
		return "no-history"
	}
	return "unknown"
}

// Suspicious reports whether groups of kind k keep a score: they grew
// over several steps and were not given back.
func (k VerdictKind) Suspicious() bool {
	return k == VerdictLeak || k == VerdictSawtooth || k == VerdictPossible || k == VerdictUneven
}

// Verdict is the one-line judgement of a group, with the figures its
// text quotes.
type Verdict struct {
	Kind VerdictKind
	// PerStep is true when the slices are steps, false for equal slices.
	PerStep bool
	// Grew is the number of slices of the window in which live bytes were
	// allocated, Window the number of slices in the window; Period is
	// the regular interval between them in slices (1: every step), 0
	// when irregular.
	Grew, Window, Period int
	// Kept and Allocated count the window's allocations still live and
	// all of them.
	Kept, Allocated int
	// Bursts is the number of bursts of frees.
	Bursts int
	// Step is the step a one-off was allocated in, the step since which a
	// bounded group is flat, the number of last steps an in-flight group
	// was allocated in, or the last step an at-start group (or the kept
	// bytes of a reused one) was allocated in; From is the first step of
	// the latter. Step 0 is the prologue, before the first step. Slices is
	// the report's number of steps.
	Step, From, Slices int
	// Freed is true when the group freed allocations in the window (for an
	// at-start group: in the whole trace).
	Freed bool
	// Mostly is true for an at-start or in-flight verdict that holds for
	// most of the group's bytes, not all; for a reused group, when most of
	// its live bytes were allocated in the first steps and kept, and Early
	// when all of them were.
	Mostly, Early bool
	// FewPatternSteps is true when the steps repeat one allocation fewer
	// than steps.MinPatternSteps times (steps.Steps.TooFewPatternSteps):
	// growth over them may be a loop inside one pass, so a leak, sawtooth
	// or possible-leak verdict says it cannot tell.
	FewPatternSteps bool
}

// early says when an at-start group's kept allocations were made:
// "before the first step", "in the first step", "in steps 2 to 3", "in
// the first 2 slices of the trace".
func (v Verdict) early() string {
	if !v.PerStep {
		if v.Step <= 1 {
			return "in the first slice of the trace"
		}
		switch {
		case v.From <= 1:
			return fmt.Sprintf("in the first %d slices of the trace", v.Step)
		case v.From == v.Step:
			return fmt.Sprintf("in slice %d of the trace", v.Step)
		}
		return fmt.Sprintf("in slices %d to %d of the trace", v.From, v.Step)
	}
	switch {
	case v.Step == 0:
		return "before the first step"
	case v.From == v.Step && v.Step == 1:
		return "in the first step"
	case v.From == v.Step:
		return fmt.Sprintf("in step %d", v.Step)
	case v.From == 0 && v.Step == 1:
		return "before or in the first step"
	case v.From == 0:
		return fmt.Sprintf("before the first step to step %d", v.Step)
	}
	return fmt.Sprintf("in steps %d to %d", v.From, v.Step)
}

// String is the verdict in plain words.
func (v Verdict) String() string {
	unit, units := "step", "steps"
	if !v.PerStep {
		unit, units = "slice", "slices"
	}
	kept := "never freed"
	if v.Kept < v.Allocated {
		kept = fmt.Sprintf("%d of %d allocations kept", v.Kept, v.Allocated)
	}
	grows := fmt.Sprintf("grew in %d of %d %s", v.Grew, v.Window, units)
	switch {
	case !v.PerStep:
		grows = fmt.Sprintf("grows steadily (in %d of %d slices of the trace)", v.Grew, v.Window)
	case v.Period == 1:
		grows = "grows every step"
	case v.Period > 1:
		grows = fmt.Sprintf("grows every %d steps", v.Period)
	}
	leakish := v.Kind == VerdictLeak || v.Kind == VerdictSawtooth || v.Kind == VerdictPossible
	if v.FewPatternSteps && leakish {
		return fmt.Sprintf("%s, %s: a leak or a loop inside one pass (%d steps from one repeating allocation cannot tell)",
			grows, kept, v.Slices)
	}
	if !v.PerStep && leakish {
		// explain's rule (analyze/explain/leak.go): equal slices cannot
		// judge growth, as one long step (a forward pass) grows the same.
		return grows + ", " + kept + ": a leak or one long step that keeps what it allocates (slices of the trace cannot tell)"
	}
	switch v.Kind {
	case VerdictLeak:
		return grows + ", " + kept + ": likely leak"
	case VerdictSawtooth:
		return fmt.Sprintf("%s, freed only in bursts (%d so far): likely leak (reference cycles left to gc?)", grows, v.Bursts)
	case VerdictPossible:
		if v.PerStep && v.Period > 1 {
			return fmt.Sprintf("grows every %d steps (in %d of %d so far), %s: possible leak", v.Period, v.Grew, v.Window, kept)
		}
		return fmt.Sprintf("grew in %d of %d %s, %s: possible leak", v.Grew, v.Window, units, kept)
	case VerdictUneven:
		return fmt.Sprintf("kept allocations from %d of %d %s, in no pattern: unclear", v.Grew, v.Window, units)
	case VerdictBounded:
		since := fmt.Sprintf("%s %d", unit, v.Step)
		if v.Step == 0 {
			since = "the first step"
		}
		if v.Freed {
			return "flat since " + since + " (frees as much as it allocates): bounded, probably not a leak"
		}
		return "grew until " + since + ", then stopped: cache or warm-up, probably not a leak"
	case VerdictReused:
		every := "every " + unit
		if !v.PerStep {
			every = "in every slice of the trace"
		}
		switch {
		case v.Early:
			return fmt.Sprintf("freed and reallocated %s, the live ones allocated %s: a per-%s working set, not a leak",
				every, v.early(), unit)
		case v.Mostly:
			return fmt.Sprintf("freed and reallocated %s, most live bytes allocated %s: a per-%s working set, not a leak",
				every, v.early(), unit)
		}
		return fmt.Sprintf("freed and reallocated %s: a per-%s working set, not a leak", every, unit)
	case VerdictAtStart:
		switch {
		case v.Mostly:
			return "mostly allocated " + v.early() + " and kept, the rest later: not growing steadily"
		case v.Freed:
			return "allocated " + v.early() + " and kept (the stack's other allocations were freed): not growing"
		}
		return "allocated " + v.early() + ", never freed: parameters/state"
	case VerdictOneOff:
		return fmt.Sprintf("allocated once in %s %d, kept: one-off, not growing", unit, v.Step)
	case VerdictInFlight:
		last := "the last " + unit
		if v.Step > 1 {
			last = fmt.Sprintf("the last %d %s", v.Step, units)
		}
		if v.Mostly {
			return fmt.Sprintf("mostly allocated in the last %s: in use at this moment, probably not a leak", units)
		}
		return "allocated in " + last + ": in use at this moment, probably not a leak"
	case VerdictFewSteps:
		n := units
		if v.Slices == 1 {
			n = unit
		}
		return fmt.Sprintf("the trace has %d %s: too few to see growth", v.Slices, n)
	case VerdictBeforeTrace:
		return "alive before the trace began: no growth evidence"
	case VerdictNoHistory:
		return "no allocation history recorded: growth unknown"
	}
	return "unknown"
}

// Leaks groups the allocations of res's device that are live after entry
// opts.At by allocation stack and ranks the groups by how much they look
// like a leak: memory that grows with the run and is never given back.
//
// Group key: the whole stack as recorded (innermost frame first), less
// the unwinder and interpreter frames _memory_viz also drops, so that two
// call sites never share a group even when they run the same PyTorch op;
// opts.Fold keys by the user frames only.
//
// Steps: the trace up to At is cut into training steps, found from a
// record_function annotation that repeats once per step, else from the
// allocation stack that recurs at a regular interval throughout the
// trace, else into opts.Slices equal slices (see [StepSource]). Each
// group's growth is its live bytes at the end of every step, counting
// every allocation of the group, the freed ones too.
//
// Score, in bytes: B × S × (1 − 1/N), where
//
//   - B is the group's live bytes allocated inside its window: from the
//     step of its first allocation, or from its last burst of frees (a
//     step that ends with at most half the live bytes of the step before)
//     when it had one; live bytes older than the trace count for nothing;
//   - S, the steadiness, is 1 minus the largest gap between the share of B
//     allocated by the end of each step of the window and the share of
//     the window's steps elapsed (a Kolmogorov–Smirnov distance against
//     even growth): 1 when B came evenly step after step, near 0 when it
//     came at once, at the start or in the last step;
//   - N is the number of steps of the window in which B was allocated: a
//     group allocated in a single step scores 0.
//
// Groups whose verdict says they do not grow (allocated at start, once,
// in the last step, flat since some step, or older than the trace) score 0.
// Temporaries freed by At are not live, so they never appear.
func Leaks(s *snapshot.Snapshot, res *replay.Result, opts LeakOptions) (*LeakReport, error) {
	trace := replay.DeviceTrace(s, res.Device)
	n := len(trace)
	at := opts.At
	if at < -1 || at >= n {
		return nil, fmt.Errorf("finding leaks on device %d: entry %d out of range [-1, %d)", res.Device, at, n)
	}
	rep := &LeakReport{
		Device: res.Device, At: at, Entries: n, Seeded: res.Seeded, History: res.Stats.Known, LastOOM: -1, Fold: opts.Fold, ByAnnotation: opts.ByAnnotation,
		ByRegion: opts.ByRegion && !opts.ByAnnotation,
		Slices:   []steps.LeakSlice{}, Groups: []LeakGroup{},
	}
	if n > 0 {
		rep.HasTime = trace[0].Flags&snapshot.FlagTime != 0
		rep.FirstUS = trace[0].TimeUS
		for i := range trace {
			if trace[i].Flags&snapshot.FlagFrames != 0 {
				rep.FramesKey = true
				break
			}
		}
		rep.EndAllocated = res.Allocated[n-1]
		if k := len(res.OOMs); k > 0 {
			rep.LastOOM = res.OOMs[k-1]
			rep.OOMAllocated = res.Allocated[rep.LastOOM]
		}
	}
	if at >= 0 {
		rep.AtUS = trace[at].TimeUS
		rep.AtAllocated = res.Allocated[at]
	}
	rep.TraceAllocs, rep.FreedShare = steps.FreedShare(res.Allocs, at)
	rep.Slices, rep.Steps = steps.LeakSlices(s, res, trace, at, opts.Steps, opts.Slices)

	b := newLeakBuilder(s, rep, opts)
	b.trace = trace
	// Pass 1: the live allocations, by group.
	live := res.Allocs
	if n > 0 && at == n-1 && !res.Check.Equal {
		// The replay does not end in the file's segments: at the end the
		// file's blocks are the live allocations, as every view shows them.
		live = fileAllocations(s, res.Device)
		attachAnnotations(live, trace)
	}
	for ai := range live {
		a := &live[ai]
		if a.AllocIndex > at {
			break // Allocs are in trace order after the seeded ones
		}
		if !a.Alive(at) {
			continue
		}
		rep.LiveBytes += a.Size
		rep.LiveCount++
		if len(s.Stack(a.Stack)) == 0 {
			rep.NoStackBytes += a.Size
			rep.NoStackCount++
		}
		if g := b.groupOf(a, true); g != nil {
			b.addLive(g, a)
			if a.AllocIndex >= 0 && a.AllocIndex < len(trace) {
				b.addRegion(g, &trace[a.AllocIndex], a.Size)
			}
		}
	}
	for _, g := range b.groups {
		if g.bytes < opts.MinBytes {
			g.dropped = true
		}
	}
	// Pass 2: every allocation of the groups kept, for their growth.
	for ai := range res.Allocs {
		a := &res.Allocs[ai]
		if a.AllocIndex > at {
			break
		}
		if g := b.groupOf(a, false); g != nil && !g.dropped {
			b.addHistory(g, a)
		}
	}
	kept := make([]*leakAcc, 0, len(b.groups))
	for _, g := range b.groups {
		if !g.dropped {
			b.finish(g)
			kept = append(kept, g)
		}
	}
	slices.SortFunc(kept, func(x, y *leakAcc) int { return compareGroups(x, y, opts.Sort) })
	rep.TotalGroups = len(kept)
	for _, g := range kept {
		rep.TotalBytes += g.bytes
		rep.TotalCount += g.count
	}
	if opts.Top > 0 && len(kept) > opts.Top {
		kept = kept[:opts.Top]
	}
	for i, g := range kept {
		g.LeakGroup.Rank = i + 1
		rep.Groups = append(rep.Groups, g.LeakGroup)
	}
	return rep, nil
}

// compareGroups orders groups by o, then by live bytes, count, and stack
// key, so that the order never depends on map iteration.
func compareGroups(x, y *leakAcc, o LeakSort) int {
	switch o {
	case LeakSortScore:
		if c := cmp.Compare(y.Score, x.Score); c != 0 {
			return c
		}
	case LeakSortCount:
		if c := cmp.Compare(y.count, x.count); c != 0 {
			return c
		}
	}
	if c := cmp.Compare(y.bytes, x.bytes); c != 0 {
		return c
	}
	if c := cmp.Compare(y.count, x.count); c != 0 {
		return c
	}
	return cmp.Compare(x.key, y.key)
}

// leakAcc accumulates one group.
// RegionBytes is a group's live bytes allocated in one compiled region.
type RegionBytes struct {
	Region string
	Bytes  int64
}

type leakAcc struct {
	LeakGroup
	key     string
	bytes   int64
	count   int
	dropped bool
	// stacks are the group's stacks with their live bytes.
	stacks []stackBytes
	// survBytes and survCount are the live allocations by the slice they
	// were allocated in; diff the growth's difference array.
	survBytes []int64
	survCount []int
	diff      []int64
	diffCount []int
	first     int // slice of the group's first allocation
}

type stackBytes struct {
	id    snapshot.StackID
	bytes int64
}

// leakBuilder holds what Leaks needs while it walks the allocations.
type leakBuilder struct {
	s      *snapshot.Snapshot
	trace  []snapshot.TraceEntry // the device's, for ByRegion
	rep    *LeakReport
	opts   LeakOptions
	kinds  []frames.FrameKind
	byKey  map[string]*leakAcc
	groups []*leakAcc // in order of creation
	// of caches each stack's group, state and keys what is known of it.
	of    []*leakAcc
	state []uint8
	keys  []string
	buf   []byte
	fr    []snapshot.FrameID
	// matched caches Focus and Ignore per frame (bit 0: matched, bit 1:
	// focus known, bit 2: ignore matched, bit 3: ignore known): a frame
	// shared by many stacks is matched once.
	matched map[snapshot.FrameID]uint8
}

// Stack states of a leakBuilder.
const (
	stackUnknown  uint8 = iota
	stackKeyed          // keys holds its key
	stackFiltered       // Focus or Ignore leaves it out
	stackNoGroup        // keyed, and no live allocation has its key
)

func newLeakBuilder(s *snapshot.Snapshot, rep *LeakReport, opts LeakOptions) *leakBuilder {
	n := max(1, len(s.Stacks))
	return &leakBuilder{
		s: s, rep: rep, opts: opts, kinds: frames.FrameKinds(s), byKey: map[string]*leakAcc{},
		of: make([]*leakAcc, n), state: make([]uint8, n), keys: make([]string, n),
	}
}

// groupOf returns the group of allocation a: the group of its stack, or
// with ByAnnotation of its annotation label up to At; nil when its stack
// is filtered out, or it has no group and create is not set.
func (b *leakBuilder) groupOf(a *replay.Allocation, create bool) *leakAcc {
	if !b.opts.ByAnnotation && !b.rep.ByRegion {
		return b.group(a.Stack, create)
	}
	id := a.Stack
	if id < 0 || int(id) >= len(b.state) {
		id = snapshot.NoStack
	}
	if b.state[id] == stackUnknown {
		if b.filteredOut(id) {
			b.state[id] = stackFiltered
		} else {
			b.state[id] = stackNoGroup // keyed by annotation, not by stack
		}
	}
	if b.state[id] == stackFiltered {
		return nil
	}
	var label, key string
	if b.rep.ByRegion {
		label = b.regionOf(a)
		key = "\x00region\x00" + label
	} else {
		label = replay.AnnotationLabel(a.AnnotationsAt(b.s, b.opts.At))
		key = "\x00annotation\x00" + label
	}
	g := b.byKey[key]
	if g == nil {
		if !create {
			return nil
		}
		g = &leakAcc{key: key, LeakGroup: LeakGroup{Stack: a.Stack, Label: label, FirstAlloc: math.MaxInt, LastAlloc: math.MinInt}}
		b.byKey[key] = g
		b.groups = append(b.groups, g)
	}
	return g
}

// group returns the group of stack id, creating it when create is set;
// nil when the stack is filtered out, or has no group and create is not
// set.
func (b *leakBuilder) group(id snapshot.StackID, create bool) *leakAcc {
	if id < 0 || int(id) >= len(b.of) {
		id = snapshot.NoStack
	}
	if g := b.of[id]; g != nil {
		return g
	}
	switch b.state[id] {
	case stackFiltered:
		return nil
	case stackNoGroup:
		if !create {
			return nil
		}
	case stackUnknown:
		if b.filteredOut(id) {
			b.state[id] = stackFiltered
			return nil
		}
		b.keys[id] = b.key(id)
		b.state[id] = stackKeyed
	}
	g := b.byKey[b.keys[id]]
	if g == nil {
		if !create {
			b.state[id] = stackNoGroup
			return nil
		}
		g = &leakAcc{key: b.keys[id], LeakGroup: LeakGroup{Stack: id, FirstAlloc: math.MaxInt, LastAlloc: math.MinInt}}
		b.byKey[g.key] = g
		b.groups = append(b.groups, g)
	}
	b.of[id] = g
	return g
}

// filteredOut applies Focus and Ignore to a stack.
func (b *leakBuilder) filteredOut(id snapshot.StackID) bool {
	if b.opts.Focus == nil && b.opts.Ignore == nil {
		return false
	}
	if b.matched == nil {
		b.matched = map[snapshot.FrameID]uint8{}
	}
	match := func(re *regexp.Regexp, shift uint) bool {
		for _, f := range b.s.Stack(id) {
			m := b.matched[f]
			if m&(2<<shift) == 0 {
				m |= 2 << shift
				if re.MatchString(frames.FrameText(b.s.Frames[f])) {
					m |= 1 << shift
				}
				b.matched[f] = m
			}
			if m&(1<<shift) != 0 {
				return true
			}
		}
		return false
	}
	if b.opts.Focus != nil && !match(b.opts.Focus, 0) {
		return true
	}
	return b.opts.Ignore != nil && match(b.opts.Ignore, 2)
}

// key returns the group key of a stack: its frames less the unwinder's,
// or with Fold its user frames when it has any.
func (b *leakBuilder) key(id snapshot.StackID) string {
	fr, user := frames.KeyFrames(b.fr[:0], b.s.Stack(id), b.kinds, b.opts.Fold)
	b.fr = fr
	b.buf = b.buf[:0]
	for _, f := range fr {
		b.buf = binary.AppendUvarint(b.buf, uint64(f))
	}
	if user {
		return "u" + string(b.buf)
	}
	return "s" + string(b.buf)
}

// sliceOf returns the slice holding entry i, -1 for i = -1 (before the
// trace).
func (b *leakBuilder) sliceOf(i int) int {
	if i < 0 {
		return -1
	}
	sl := b.rep.Slices
	return sort.Search(len(sl), func(k int) bool { return sl[k].Start > i }) - 1
}

// regionOf is the compiled region allocation a was made in
// (frames.CompiledRegion of its alloc entry), "" outside any region or
// when the trace does not hold its alloc.
func (b *leakBuilder) regionOf(a *replay.Allocation) string {
	if a.AllocIndex < 0 || a.AllocIndex >= len(b.trace) {
		return ""
	}
	return frames.CompiledRegion(b.s, &b.trace[a.AllocIndex])
}

// addRegion counts size bytes of g as allocated in the compiled region
// of alloc entry e, if any.
func (b *leakBuilder) addRegion(g *leakAcc, e *snapshot.TraceEntry, size int64) {
	r := frames.CompiledRegion(b.s, e)
	if r == "" {
		return
	}
	if k := slices.IndexFunc(g.Regions, func(rb RegionBytes) bool { return rb.Region == r }); k >= 0 {
		g.Regions[k].Bytes += size
		return
	}
	g.Regions = append(g.Regions, RegionBytes{r, size})
}

// addAnnotation adds a live allocation's annotation label to g.
func (b *leakBuilder) addAnnotation(g *leakAcc, a *replay.Allocation) {
	if len(a.Annotations) == 0 {
		return
	}
	l := replay.AnnotationLabel(a.AnnotationsAt(b.s, b.opts.At))
	if l == "" {
		return
	}
	if k := slices.IndexFunc(g.Annotations, func(x AnnotationBytes) bool { return x.Label == l }); k >= 0 {
		g.Annotations[k].Bytes += a.Size
		g.Annotations[k].Count++
		return
	}
	g.Annotations = append(g.Annotations, AnnotationBytes{l, a.Size, 1})
}

// addLive adds a live allocation to g.
func (b *leakBuilder) addLive(g *leakAcc, a *replay.Allocation) {
	b.addAnnotation(g, a)
	g.bytes += a.Size
	g.count++
	if k := slices.IndexFunc(g.stacks, func(sb stackBytes) bool { return sb.id == a.Stack }); k >= 0 {
		g.stacks[k].bytes += a.Size
	} else {
		g.stacks = append(g.stacks, stackBytes{a.Stack, a.Size})
	}
	if g.count == 1 {
		g.MinSize, g.MaxSize = a.Size, a.Size
	}
	g.MinSize, g.MaxSize = min(g.MinSize, a.Size), max(g.MaxSize, a.Size)
	g.FirstAlloc = min(g.FirstAlloc, a.AllocIndex)
	g.LastAlloc = max(g.LastAlloc, a.AllocIndex)
	k := b.sliceOf(a.AllocIndex)
	if k < 0 {
		g.BeforeTrace++
		g.BeforeTraceBytes += a.Size
		return
	}
	if g.survBytes == nil {
		g.survBytes = make([]int64, len(b.rep.Slices))
		g.survCount = make([]int, len(b.rep.Slices))
	}
	g.survBytes[k] += a.Size
	g.survCount[k]++
}

// addHistory adds any allocation of g (live or freed by At) to its
// growth: it is live at the end of the slices from the one it was
// allocated in up to the one before it was freed.
func (b *leakBuilder) addHistory(g *leakAcc, a *replay.Allocation) {
	nsl := len(b.rep.Slices)
	if nsl == 0 {
		return
	}
	if g.diff == nil {
		g.diff = make([]int64, nsl+1)
		g.diffCount = make([]int, nsl+1)
		g.Growth = make([]GrowthPoint, nsl)
		g.first = nsl
	}
	ks := b.sliceOf(a.AllocIndex)
	if ks >= 0 {
		g.Growth[ks].Allocs++
	}
	ks = max(ks, 0)
	g.first = min(g.first, ks)
	free := a.FreeRequested
	if free < 0 {
		free = a.FreeCompleted
	}
	kf := nsl
	if free >= 0 && free <= b.rep.At {
		kf = b.sliceOf(free)
		g.Growth[kf].Frees++
	}
	if kf > ks {
		g.diff[ks] += a.Size
		g.diff[kf] -= a.Size
		g.diffCount[ks]++
		g.diffCount[kf]--
	}
}

// Verdict thresholds.
const (
	// burstFraction: a slice is a burst of frees when it ends with at most
	// this share of the live bytes of the slice before.
	burstFraction = 0.5
	// clearedFraction: a burst starts a group's window when at most this
	// share of the group's kept bytes were allocated before it.
	clearedFraction = 0.1
	// leakSteadiness and possibleSteadiness: S needed for a "likely" and
	// a "possible" leak.
	leakSteadiness     = 0.75
	possibleSteadiness = 0.5
	// flatTolerance: a group is flat when its live bytes stay within this
	// factor of their final value over the second half of its window.
	flatTolerance = 1.1
	// mostly: the share of bytes that makes a group "mostly" at start or
	// in flight.
	mostly = 0.8
)

// finish computes g's series, score and verdict.
func (b *leakBuilder) finish(g *leakAcc) {
	rep := b.rep
	nsl := len(rep.Slices)
	slices.SortStableFunc(g.Regions, func(x, y RegionBytes) int { return cmp.Compare(y.Bytes, x.Bytes) })
	slices.SortStableFunc(g.Annotations, func(x, y AnnotationBytes) int { return cmp.Compare(y.Bytes, x.Bytes) })
	// The representative stack: most live bytes, then lowest id.
	slices.SortFunc(g.stacks, func(x, y stackBytes) int {
		if c := cmp.Compare(y.bytes, x.bytes); c != 0 {
			return c
		}
		return cmp.Compare(x.id, y.id)
	})
	g.Stack, g.Stacks = g.stacks[0].id, len(g.stacks)
	g.LeakGroup.Bytes, g.LeakGroup.Count = g.bytes, g.count
	g.FirstAllocUS, g.LastAllocUS = b.timeOf(g.FirstAlloc), b.timeOf(g.LastAlloc)
	g.Verdict = Verdict{PerStep: rep.Steps.Source == steps.StepsAnnotation || rep.Steps.Source == steps.StepsPattern, Slices: rep.Steps.Count,
		FewPatternSteps: rep.Steps.TooFewPatternSteps()}
	if nsl == 0 {
		g.Growth = []GrowthPoint{}
		g.Verdict.Kind = VerdictNoHistory
		if rep.Entries > 0 {
			g.Verdict.Kind = VerdictBeforeTrace
		}
		return
	}
	if g.Growth == nil { // only allocations older than the trace
		g.Growth = make([]GrowthPoint, nsl)
		g.diff = make([]int64, nsl+1)
		g.diffCount = make([]int, nsl+1)
		g.first = 0
	}
	if g.survBytes == nil {
		g.survBytes = make([]int64, nsl)
		g.survCount = make([]int, nsl)
	}
	var live int64
	var cnt int
	for k := range nsl {
		live += g.diff[k]
		cnt += g.diffCount[k]
		g.Growth[k].Bytes, g.Growth[k].Count = live, cnt
	}
	if g.BeforeTrace > 0 {
		g.first = 0
	}
	inTrace := b.window(g)
	b.judge(g, inTrace)
}

// window sets g's window, the steps it grew in and its steadiness over
// them (see [Leaks]), and returns the live bytes g allocated inside the
// trace.
func (b *leakBuilder) window(g *leakAcc) (inTrace int64) {
	nsl := len(b.rep.Slices)
	// The window: from the first allocation, or from the last burst of
	// frees that cleared the group: one after which at most
	// clearedFraction of the live bytes allocated in the trace remain
	// from before it. (A group that frees two of every three allocations
	// at once keeps the third from all along: that burst starts nothing.)
	for k := range nsl {
		inTrace += g.survBytes[k]
	}
	w := g.first
	bursts := 0
	var before int64 // live bytes allocated before slice k
	for k := g.first + 1; k < nsl; k++ {
		before += g.survBytes[k-1]
		if prev := g.Growth[k-1].Bytes; prev > 0 && float64(g.Growth[k].Bytes) <= burstFraction*float64(prev) {
			bursts++
			if float64(before) <= clearedFraction*float64(inTrace) {
				w, g.Bursts = k, bursts
			}
		}
	}
	g.Window = w
	m := nsl - w
	var grewAt []int
	v := &g.Verdict
	for k := w; k < nsl; k++ {
		g.WindowBytes += g.survBytes[k]
		v.Kept += g.survCount[k]
		v.Allocated += g.Growth[k].Allocs
		if g.Growth[k].Frees > 0 {
			v.Freed = true
		}
		if g.survCount[k] > 0 {
			grewAt = append(grewAt, k)
		}
	}
	g.GrowthSteps = len(grewAt)
	v.Grew, v.Window, v.Bursts = len(grewAt), m, g.Bursts
	if g.WindowBytes > 0 {
		var cum int64
		d := 0.0
		for k := w; k < nsl; k++ {
			cum += g.survBytes[k]
			d = max(d, math.Abs(float64(cum)/float64(g.WindowBytes)-float64(k-w+1)/float64(m)))
		}
		g.Steadiness = 1 - d
	}
	v.Period = period(grewAt, w, nsl)
	return inTrace
}

// judge gives g its verdict and score from where its kept bytes came
// from (inTrace: those allocated inside the trace) and its window.
func (b *leakBuilder) judge(g *leakAcc, inTrace int64) {
	rep := b.rep
	nsl := len(rep.Slices)
	w := g.Window
	m := nsl - w
	v := &g.Verdict
	// Where the kept bytes came from.
	startEnd := max(2, (nsl+9)/10) // the first tenth of the trace, at least two slices
	var atStart, atEnd int64
	firstGrow, lastGrow := nsl, -1
	for k := range nsl {
		if g.survBytes[k] == 0 {
			continue
		}
		firstGrow, lastGrow = min(firstGrow, k), k
		if k < startEnd {
			atStart += g.survBytes[k]
		}
		if k >= nsl-max(1, nsl/10) {
			atEnd += g.survBytes[k]
		}
	}
	growing := 0 // slices with kept allocations, whole trace
	for k := range nsl {
		if g.survCount[k] > 0 {
			growing++
		}
	}
	step := func(k int) int { return rep.Slices[k].Step }
	// The steps the kept bytes of the first slices were allocated in, for
	// the at-start and reused verdicts; whether the group ever freed.
	lastEarly := firstGrow
	for k := firstGrow; k < min(startEnd, nsl); k++ {
		if g.survBytes[k] > 0 {
			lastEarly = k
		}
	}
	early := func() { v.From, v.Step = step(firstGrow), step(lastEarly) }
	freedAny := false
	for k := range nsl {
		freedAny = freedAny || g.Growth[k].Frees > 0
	}
	mostlyEarly := float64(atStart) >= mostly*float64(inTrace)

	switch {
	case inTrace == 0:
		v.Kind = VerdictBeforeTrace
	case nsl < 3:
		v.Kind = VerdictFewSteps
	case firstGrow >= nsl-2:
		// The last slice is often the tail of a step, so the step before
		// it counts as the current one too.
		v.Kind, v.Step = VerdictInFlight, nsl-firstGrow
	case b.reused(g):
		v.Kind, v.Mostly, v.Early = VerdictReused, mostlyEarly && atStart < inTrace, atStart == inTrace
		early()
	case lastGrow < startEnd:
		v.Kind, v.Grew, v.Freed = VerdictAtStart, growing, freedAny
		early()
	case growing == 1:
		v.Kind, v.Step = VerdictOneOff, step(firstGrow)
	case mostlyEarly && g.Steadiness < possibleSteadiness:
		v.Kind, v.Grew, v.Mostly, v.Freed = VerdictAtStart, growing, true, freedAny
		early()
	case m >= 3 && b.flat(g, w):
		v.Kind, v.Step = VerdictBounded, step(b.flatSince(g, w))
	case g.Bursts > 0 && g.GrowthSteps >= 3 && g.Steadiness >= possibleSteadiness:
		v.Kind = VerdictSawtooth
	case g.GrowthSteps >= 3 && g.Steadiness >= leakSteadiness:
		v.Kind = VerdictLeak
	case g.GrowthSteps >= 2 && g.Steadiness >= possibleSteadiness && (v.PerStep || monotone(g.Growth)):
		// Without steps, growth that comes and goes over equal slices of
		// the trace says nothing of iterations: only growth that never
		// drops is worth "possible leak".
		v.Kind = VerdictPossible
	case float64(atEnd) >= mostly*float64(inTrace):
		v.Kind, v.Mostly = VerdictInFlight, true
	default:
		v.Kind = VerdictUneven
	}
	if g.BeforeTraceBytes > inTrace && !v.Kind.Suspicious() {
		v.Kind = VerdictBeforeTrace
	}
	if v.Kind.Suspicious() && g.GrowthSteps > 0 {
		g.Score = float64(g.WindowBytes) * g.Steadiness * (1 - 1/float64(g.GrowthSteps))
	}
}

// monotone reports whether a group's live bytes never drop from one slice
// to the next.
func monotone(gs []GrowthPoint) bool {
	for k := 1; k < len(gs); k++ {
		if gs[k].Bytes < gs[k-1].Bytes {
			return false
		}
	}
	return true
}

// reused reports whether g is a per-step working set: it allocated and
// freed in at least 90% of the steps (the prologue and the last slice,
// often a step in progress, left out; at least minSteps of them), and its
// live bytes at the end of those steps stay within flatTolerance of each
// other.
func (b *leakBuilder) reused(g *leakAcc) bool {
	first, end := 0, len(g.Growth)-1
	if b.rep.Steps.Prologue {
		first = 1
	}
	n := end - first
	if n < steps.MinSteps {
		return false
	}
	churn := 0
	lo, hi := int64(math.MaxInt64), int64(0)
	for k := first; k < end; k++ {
		p := &g.Growth[k]
		if p.Allocs > 0 && p.Frees > 0 {
			churn++
		}
		lo, hi = min(lo, p.Bytes), max(hi, p.Bytes)
	}
	flat := hi == lo || lo > 0 && float64(hi) <= flatTolerance*float64(lo)
	return flat && float64(churn) >= 0.9*float64(n)
}

// flat reports whether g's live bytes stopped growing in its window:
// they stay within flatTolerance of their final value over the second
// half of the window at least.
func (b *leakBuilder) flat(g *leakAcc, w int) bool {
	nsl := len(g.Growth)
	return g.Growth[nsl-1].Bytes > 0 && b.flatSince(g, w) <= w+(nsl-w-1)/2
}

// flatSince returns the slice since which g's live bytes stay within
// flatTolerance of their final value.
func (b *leakBuilder) flatSince(g *leakAcc, w int) int {
	nsl := len(g.Growth)
	end := float64(g.Growth[nsl-1].Bytes)
	k := nsl - 1
	for k > w {
		v := float64(g.Growth[k-1].Bytes)
		if v*flatTolerance < end || v > end*flatTolerance {
			break
		}
		k--
	}
	return k
}

// period returns the regular interval between the slices in grewAt when
// they cover the window [w, nsl) at that interval, else 0 (two growths
// count when each end of the window is less than the interval away). Growth in at
// least 90% of the window's slices counts as every slice.
func period(grewAt []int, w, nsl int) int {
	m := nsl - w
	if len(grewAt) < 2 {
		return 0
	}
	if len(grewAt) == 2 {
		// Two growths: a period only when they split the window in equal
		// thirds or so (a cache kept every k-th step of 2k+ steps), each
		// end within the period.
		p := grewAt[1] - grewAt[0]
		if p < 2 || grewAt[0]-w >= p || nsl-1-grewAt[1] >= p {
			return 0
		}
		return p
	}
	if float64(len(grewAt)) >= 0.9*float64(m) {
		return 1
	}
	p := grewAt[1] - grewAt[0]
	for i := 2; i < len(grewAt); i++ {
		if grewAt[i]-grewAt[i-1] != p {
			return 0
		}
	}
	// The growth must span the window, give or take one period at
	// either end.
	if grewAt[0]-w > p || nsl-1-grewAt[len(grewAt)-1] > p {
		return 0
	}
	return p
}

// timeOf returns entry i's time_us, 0 when unknown.
func (b *leakBuilder) timeOf(i int) int64 {
	if i < 0 || !b.rep.HasTime {
		return 0
	}
	return b.s.Traces[b.rep.Device][i].TimeUS
}

// fileAllocations returns the active blocks of device's segments in the
// file as Allocations older than the trace (AllocIndex -1), in file order.
// attachAnnotations gives each of live (the file's blocks) the annotate
// entries of trace made at its address since the last alloc there: the
// annotate entry names the allocation's base address (torch/cuda/memory.py
// _annotate_memory), so this holds without the replay.
func attachAnnotations(live []replay.Allocation, trace []snapshot.TraceEntry) {
	by := map[snapshot.Addr][]replay.Annotation{}
	for i := range trace {
		switch e := &trace[i]; e.Action {
		case snapshot.ActionAlloc:
			delete(by, e.Addr)
		case snapshot.ActionAnnotate:
			by[e.Addr] = append(by[e.Addr], replay.Annotation{Index: i, Metadata: e.UserMetadata})
		}
	}
	for k := range live {
		live[k].Annotations = by[live[k].Addr]
	}
}

func fileAllocations(s *snapshot.Snapshot, device int) []replay.Allocation {
	var out []replay.Allocation
	for i := range s.Segments {
		sg := &s.Segments[i]
		if sg.Device != device {
			continue
		}
		for j := range sg.Blocks {
			b := &sg.Blocks[j]
			if b.State != snapshot.StateActiveAllocated {
				continue
			}
			out = append(out, replay.Allocation{
				Addr: b.Address, Size: b.Size, Requested: b.RequestedSize, Stream: sg.Stream, Pool: sg.Pool,
				Large: allocator.IsLargeSegment(sg), Stack: b.Stack, AllocIndex: -1, FreeRequested: -1, FreeCompleted: -1,
			})
		}
	}
	return out
}
