// Package explain turns what the other analyses measure (the allocator
// replay, its state at each OOM, the what-if simulation, the leak ranking,
// the recording's coverage) into a short ranked list of findings for one
// device: what went wrong, the figures that prove it, the allocations
// involved and what to change. It computes; package report words and
// prints the findings.
//
// Every figure of a finding is a figure another view prints for the same
// file (state --at oom, summary, whatif, leaks --json): explain chooses and
// ranks, it does not measure anything those views do not.
package explain

import (
	"cmp"
	"slices"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// Kind classifies a finding. The strings are the "kind" of --json and are
// stable.
type Kind string

// Finding kinds.
const (
	// KindOOMFragmentation: an OOM whose pool had enough cached free bytes
	// for the request, none of its free blocks being large enough.
	KindOOMFragmentation Kind = "oom-fragmentation"
	// KindOOMCap: an OOM while the device had more free memory than the
	// request: the process's own cap
	// (torch.cuda.set_per_process_memory_fraction) was the limit.
	KindOOMCap Kind = "oom-cap"
	// KindOOMDevice: an OOM while the device had less free memory than
	// the request.
	KindOOMDevice Kind = "oom-device"
	// KindBlockers: the live allocations that cut an OOM's free space
	// into pieces, or pin segments the allocator could not release.
	KindBlockers Kind = "blockers"
	// KindAvoidableMalloc: segment_allocs made while the pool's cached
	// free bytes would have covered the request.
	KindAvoidableMalloc Kind = "avoidable-malloc"
	// KindReservedGap: torch's peak reserved far above its peak
	// allocated.
	KindReservedGap Kind = "reserved-gap"
	// KindPool: a private pool (a CUDA-graph capture's, a MemPool).
	KindPool Kind = "pool"
	// KindLeak: the leak ranking's top suspicious group.
	KindLeak Kind = "leak"
	// KindNoLeak: steps were found and no stack grows over them.
	KindNoLeak Kind = "no-leak"
	// KindGrowthUnjudged: no steps were found, so growth cannot be judged.
	KindGrowthUnjudged Kind = "growth-unjudged"
	// KindRecording: how far the recording can be trusted, and the
	// recording options that would make it complete.
	KindRecording Kind = "recording"
)

// Severity ranks findings: errors first.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

func (s Severity) rank() int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

// Unit of a figure.
type Unit string

// Units.
const (
	Bytes   Unit = "bytes"
	Entries Unit = "entries"
	Micros  Unit = "microseconds"
	Count   Unit = "count"
	Entry   Unit = "entry" // a trace entry index
)

// Figure is one figure a finding rests on.
type Figure struct {
	// Name is its --json key ("request_bytes").
	Name  string
	Value int64
	Unit  Unit
	// Exactness is how far it can be trusted (replay.DecideTrust's
	// marks): Exact, LowerBound, or Unknown (then Value means nothing).
	Exactness stats.Exactness
}

// Blocker is the live allocations of one allocation stack that block a
// request: they cut the free space into pieces, or pin a segment.
type Blocker struct {
	Stack snapshot.StackID
	// Count and Bytes are the blocking allocations of the stack.
	Count int
	Bytes int64
	// Stranded is the free bytes they strand: the free bytes inside the
	// window they cut (contiguity), or the free bytes of the segments they
	// pin (release).
	Stranded int64
	// Segments counts the segments they sit in.
	Segments int
	// FirstAlloc is the alloc entry of the oldest (-1: older than the
	// trace); HeldEntries and HeldUS how long the oldest had been live at
	// the moment (entries, microseconds; HeldUS -1 without timestamps).
	FirstAlloc  int
	HeldEntries int
	HeldUS      int64
	// MinSize and MaxSize are the smallest and largest blocking block,
	// bytes.
	MinSize, MaxSize int64
}

// Finding is one conclusion about a device.
type Finding struct {
	Kind     Kind
	Severity Severity
	// Entry is the trace entry the finding is about (-1: none): the oom
	// entry, the first avoidable segment_alloc.
	Entry int
	// Pool and Stream, Large: where (the request's pool, the gap's
	// largest pool); PoolSet is false when the finding has no pool.
	PoolSet bool
	Large   bool
	Pool    snapshot.PoolID
	Stream  uint64
	Figures []Figure
	// Blockers are the allocations involved, ranked by stranded bytes.
	Blockers []Blocker
	// Stacks are other stacks the finding names (the leak's stack, the
	// pool's first allocation), innermost frame first.
	Stacks []snapshot.StackID
	// Setting is the PYTORCH_CUDA_ALLOC_CONF value to try (whatif's best
	// row), "" when none; SettingPeak its simulated peak reserved bytes;
	// SettingFits whether it ran the whole trace without an OOM.
	Setting     string
	SettingPeak int64
	SettingFits bool
	// SettingFrom, when not 0, is the smallest cap under which the
	// setting fits (whatif's fits_from_bytes), for a setting that fits
	// only from a cap on.
	SettingFrom int64
	// SettingFromLow, when not 0, says SettingFrom is a bound: the
	// setting fits from some cap above SettingFromLow, at most
	// SettingFrom (whatif's search stopped on its budget: its SettingFit
	// with FromExact false).
	SettingFromLow int64
	// SettingFromAbove is true when SettingFrom is above every cap the
	// file allows (whatif's cap, or its interval's upper bound): the
	// setting fails at all of them.
	SettingFromAbove bool
	// CapSource is whatif's limit_source for an OOM finding ("flag",
	// "oom-message", "inferred-oom", "inferred-releases", "").
	CapSource string
	// Mode says how the blockers block: "contiguity" or "release".
	Mode string
	// Note carries words the kind needs beyond its figures: the leak
	// verdict, the pool's compile context, the step source.
	Note string
	// Steps is the leak ranking's step cutting (leak findings).
	Steps steps.Steps
	// Context is the compile_context of a pool's first allocation.
	Context string
	// Recording findings: the trust verdict, the coverage kind (info's
	// "from_start", "wrapped", ...), and the options the file lacks:
	// MaxEntries a max_entries to record with (0: none), StartEarly to
	// start before the first allocation, EnableAll enabled="all",
	// ContextAll context="all".
	Trust      stats.Known
	Coverage   string
	MaxEntries int
	StartEarly bool
	EnableAll  bool
	ContextAll bool
}

// Figure returns the figure named name and whether the finding has it.
func (f *Finding) Figure(name string) (Figure, bool) {
	for _, g := range f.Figures {
		if g.Name == name {
			return g, true
		}
	}
	return Figure{}, false
}

func (f *Finding) add(name string, v int64, u Unit, e stats.Exactness) {
	f.Figures = append(f.Figures, Figure{Name: name, Value: v, Unit: u, Exactness: e})
}

// Device is the findings of one device, ranked.
type Device struct {
	Device   int
	Findings []Finding
	// Whatif is the what-if analysis the findings used (nil when none
	// ran), for a view that shows it beside them (state --at oom).
	Whatif *whatif.Result
}

// Input is what [Explain] reads for one device; the caller runs each
// analysis once and shares it with the other views.
type Input struct {
	Snap *snapshot.Snapshot
	// Replay is replay.Run's result for the device (Full),
	// with Allocs; nil when the device has no trace.
	Replay *replay.Result
	// OOMStates are the states after each of Replay.OOMs, in order.
	OOMStates []*replay.State
	// PeakState is the state at Replay.PeakReservedIndex, nil when not
	// taken (no reserved gap).
	PeakState *replay.State
	// Whatif is the what-if analysis (nil when not run: no OOM and no
	// reserved gap, or the device has no trace).
	Whatif *whatif.Result
	// Leaks is the leak ranking at its default moment (nil without a
	// trace).
	Leaks *leaks.LeakReport
	// Pools are the figures of the device's private pools, as every view
	// shows them (analysis.File.Pools; nil when it has none).
	Pools []stats.PoolFigures
	// Recording and Coverage are info's inference for the file and the
	// device.
	Recording *info.Recording
	Coverage  *info.DeviceInfo
}

// NeedsWhatif reports whether [Explain] uses a what-if analysis of r's
// device: when it has an OOM, or a reserved gap worth explaining.
func NeedsWhatif(r *replay.Result) bool {
	if r == nil || len(r.Reserved) == 0 {
		return false
	}
	if len(r.OOMs) > 0 {
		return true
	}
	_, ok := reservedGap(r)
	return ok
}

// Explain returns the findings for one device, most severe first, the
// warnings by the bytes they are about (see [Finding.stake]).
func Explain(in Input) *Device {
	d := &Device{Device: -1, Findings: []Finding{}}
	r := in.Replay
	if r != nil {
		d.Device = r.Device
		for _, st := range in.OOMStates {
			if st != nil && st.OOM != nil {
				d.Findings = append(d.Findings, oomFindings(in, st.Index, st)...)
			}
		}
		if f, ok := avoidableMallocs(in); ok {
			d.Findings = append(d.Findings, f)
		}
		if f, ok := gapFinding(in); ok {
			d.Findings = append(d.Findings, f)
		}
		if f, ok := leakFinding(in); ok {
			d.Findings = append(d.Findings, f)
		}
	}
	d.Findings = append(d.Findings, poolFindings(in)...)
	if f, ok := recordingFinding(in); ok {
		d.Findings = append(d.Findings, f)
	}
	if in.Coverage != nil {
		d.Device = in.Coverage.Device
	}
	d.Whatif = in.Whatif
	slices.SortStableFunc(d.Findings, func(a, b Finding) int {
		if c := cmp.Compare(a.Severity.rank(), b.Severity.rank()); c != 0 {
			return c
		}
		if a.Severity == SeverityWarning {
			return cmp.Compare(b.stake(), a.stake())
		}
		return 0
	})
	return d
}

// stake is the bytes a warning is about, for ranking warnings: a leak's
// live bytes, the avoidable segment_allocs' bytes, the reserved gap, an
// abandoned pool's reserved bytes; 0 for a recording warning (a caveat on
// the others, ranked after them). Errors keep their order (each OOM, then
// its blockers), and so do infos.
func (f *Finding) stake() int64 {
	name := ""
	switch f.Kind {
	case KindLeak:
		name = "bytes"
	case KindAvoidableMalloc:
		name = "avoidable_segment_bytes"
	case KindReservedGap:
		name = "gap_bytes"
	case KindPool:
		name = "reserved_at_end_bytes"
	}
	g, ok := f.Figure(name)
	if !ok {
		return 0
	}
	return g.Value
}

// trace returns the device's trace entries.
func trace(s *snapshot.Snapshot, device int) []snapshot.TraceEntry {
	if device < 0 || device >= len(s.Traces) {
		return nil
	}
	return s.Traces[device]
}

// span returns the microseconds between entries a and b (-1 when either
// has no time_us).
func span(tr []snapshot.TraceEntry, a, b int) int64 {
	if a < 0 || b < 0 || a >= len(tr) || b >= len(tr) {
		return -1
	}
	if tr[a].Flags&snapshot.FlagTime == 0 || tr[b].Flags&snapshot.FlagTime == 0 {
		return -1
	}
	return tr[b].TimeUS - tr[a].TimeUS
}
