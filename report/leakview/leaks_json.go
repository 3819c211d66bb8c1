package leakview

import (
	"io"
	"math"

	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/snapshot"
)

// The --json schema of `snapview leaks`. Sizes are bytes; times are
// time_us values as the trace records them (microseconds since the Unix
// epoch), null when unknown; entries index the device's trace.
type leaksJSON struct {
	Devices []leakDeviceJSON `json:"devices"`
	// Groups of every device, by device then rank.
	Groups []leakGroupJSON `json:"groups"`
	// Host is the file's pinned host memory, as summary --json gives it
	// (left out when the file has none).
	Host *hostview.JSON `json:"host,omitempty"`
}

type leakDeviceJSON struct {
	Device int `json:"device"`
	// AtEntry is the entry after which allocations were taken (-1: before
	// the first entry, or no trace).
	AtEntry int    `json:"at_entry"`
	AtUS    *int64 `json:"at_us"`
	Entries int    `json:"entries"`
	// TraceStartsLate: the trace misses the start of the run.
	TraceStartsLate bool            `json:"trace_starts_late"`
	LiveBytes       int64           `json:"live_bytes"`
	LiveCount       int             `json:"live_count"`
	NoStackBytes    int64           `json:"no_stack_bytes"`
	NoStackCount    int             `json:"no_stack_count"`
	LastOOMEntry    int             `json:"last_oom_entry"`
	TotalGroups     int             `json:"total_groups"`
	Steps           leakStepsJSON   `json:"steps"`
	Slices          []leakSliceJSON `json:"slices"`
}

type leakStepsJSON struct {
	// Source is "annotation", "pattern", "slices" or "none".
	Source string `json:"source"`
	// Name is the record_function range (annotation).
	Name string `json:"name,omitempty"`
	// Marker is the repeating allocation's stack (pattern).
	Marker   []stacks.FrameJSON `json:"marker,omitempty"`
	Count    int                `json:"count"`
	Prologue bool               `json:"prologue"`
}

type leakSliceJSON struct {
	Step       int    `json:"step"`
	StartEntry int    `json:"start_entry"`
	EndEntry   int    `json:"end_entry"`
	StartUS    *int64 `json:"start_us"`
	EndUS      *int64 `json:"end_us"`
}

type leakGroupJSON struct {
	Rank   int `json:"rank"`
	Device int `json:"device"`
	// Score is the leak score in bytes, rounded.
	Score           int64            `json:"score"`
	Bytes           int64            `json:"bytes"`
	Count           int              `json:"count"`
	BeforeTrace     int              `json:"before_trace_count"`
	FirstAllocUS    *int64           `json:"first_alloc_us"`
	LastAllocUS     *int64           `json:"last_alloc_us"`
	FirstAllocEntry int              `json:"first_alloc_entry"`
	LastAllocEntry  int              `json:"last_alloc_entry"`
	Steadiness      float64          `json:"steadiness"`
	GrowthSteps     int              `json:"growth_steps"`
	WindowStep      int              `json:"window_step"`
	Bursts          int              `json:"bursts"`
	Growth          []leakGrowthJSON `json:"growth"`
	// Kind is a stable identifier of the verdict ("leak", "at-start", ...).
	Kind    string `json:"kind"`
	Verdict string `json:"verdict"`
	// Stacks is the number of stacks in the group (more than 1 with
	// --fold); Stack is the one holding the most live bytes, innermost
	// frame first, as the snapshot records it.
	Stacks int                `json:"stacks"`
	Stack  []stacks.FrameJSON `json:"stack"`
	// Regions are the compiled regions (compile_context) the live bytes
	// were allocated in, most bytes first; left out when none.
	Regions []leakRegionJSON `json:"regions,omitempty"`
	// Annotations are the live bytes by annotation label (the annotate
	// entries' user_metadata, "; " between several on one allocation),
	// most bytes first; left out when none.
	Annotations []leakAnnotationJSON `json:"annotations,omitempty"`
	// Label is the group's annotation with --by-annotation, its compiled
	// region with --by region ("" for the allocations without one); left
	// out otherwise.
	Label *string `json:"label,omitempty"`
}

type leakAnnotationJSON struct {
	Label string `json:"label"`
	Bytes int64  `json:"bytes"`
	Count int    `json:"count"`
}

type leakGrowthJSON struct {
	Step   int    `json:"step"`
	EndUS  *int64 `json:"end_us"`
	Bytes  int64  `json:"bytes"`
	Count  int    `json:"count"`
	Allocs int    `json:"allocs"`
	Frees  int    `json:"frees"`
}

// WriteLeaksJSON writes the leak reports as one JSON document (see
// leaksJSON): the devices looked at, and every group kept with its growth
// per step and its whole stack, innermost frame first; then host, the
// file's pinned host memory (hostview.NewJSON), left out when nil.
func WriteLeaksJSON(w io.Writer, s *snapshot.Snapshot, reps []*leaks.LeakReport, host *hostview.JSON) error {
	out := leaksJSON{Devices: []leakDeviceJSON{}, Groups: []leakGroupJSON{}, Host: host}
	for _, rep := range reps {
		usOf := func(us int64) *int64 {
			if !rep.HasTime {
				return nil
			}
			return &us
		}
		d := leakDeviceJSON{
			Device: rep.Device, AtEntry: rep.At, Entries: rep.Entries, TraceStartsLate: rep.Seeded,
			LiveBytes: rep.LiveBytes, LiveCount: rep.LiveCount, NoStackBytes: rep.NoStackBytes, NoStackCount: rep.NoStackCount,
			LastOOMEntry: rep.LastOOM, TotalGroups: rep.TotalGroups,
			Steps: leakStepsJSON{
				Source: rep.Steps.Source.String(), Name: rep.Steps.Name, Count: rep.Steps.Count, Prologue: rep.Steps.Prologue,
			},
			Slices: make([]leakSliceJSON, 0, len(rep.Slices)),
		}
		if rep.At >= 0 {
			d.AtUS = usOf(rep.AtUS)
		}
		if rep.Steps.Source == steps.StepsPattern {
			d.Steps.Marker = stacks.FramesJSON(s, rep.Steps.Marker)
		}
		for _, sl := range rep.Slices {
			d.Slices = append(d.Slices, leakSliceJSON{
				Step: sl.Step, StartEntry: sl.Start, EndEntry: sl.End, StartUS: usOf(sl.StartUS), EndUS: usOf(sl.EndUS),
			})
		}
		out.Devices = append(out.Devices, d)
		for _, g := range rep.Groups {
			gj := leakGroupJSON{
				Rank: g.Rank, Device: rep.Device, Score: int64(math.Round(g.Score)), Bytes: g.Bytes, Count: g.Count,
				BeforeTrace: g.BeforeTrace, FirstAllocEntry: g.FirstAlloc, LastAllocEntry: g.LastAlloc,
				Steadiness: math.Round(g.Steadiness*1e4) / 1e4, GrowthSteps: g.GrowthSteps, WindowStep: -1, Bursts: g.Bursts,
				Growth: make([]leakGrowthJSON, 0, len(g.Growth)), Kind: g.Verdict.Kind.String(), Verdict: g.Verdict.String(),
				Stacks: g.Stacks, Stack: stacks.FramesJSON(s, g.Stack),
			}
			for _, r := range g.Regions {
				gj.Regions = append(gj.Regions, leakRegionJSON{Region: r.Region, Bytes: r.Bytes})
			}
			if rep.ByAnnotation || rep.ByRegion {
				gj.Label = &g.Label
			}
			for _, a := range g.Annotations {
				gj.Annotations = append(gj.Annotations, leakAnnotationJSON{Label: a.Label, Bytes: a.Bytes, Count: a.Count})
			}
			if g.FirstAlloc >= 0 {
				gj.FirstAllocUS = usOf(g.FirstAllocUS)
			}
			if g.LastAlloc >= 0 {
				gj.LastAllocUS = usOf(g.LastAllocUS)
			}
			if g.Window < len(rep.Slices) {
				gj.WindowStep = rep.Slices[g.Window].Step
			}
			for k, p := range g.Growth {
				gj.Growth = append(gj.Growth, leakGrowthJSON{
					Step: rep.Slices[k].Step, EndUS: usOf(rep.Slices[k].EndUS), Bytes: p.Bytes, Count: p.Count,
					Allocs: p.Allocs, Frees: p.Frees,
				})
			}
			out.Groups = append(out.Groups, gj)
		}
	}
	return kit.WriteJSON(w, out)
}

// leakRegionJSON is a group's live bytes allocated in one compiled region.
type leakRegionJSON struct {
	Region string `json:"region"`
	Bytes  int64  `json:"bytes"`
}

// WriteLeaksAs writes the reports as JSON (WriteLeaksJSON, with the
// file's pinned host memory h) or as text (WriteLeaks with o, then h's
// section when s holds some: hostview.WriteAfter). Errors are w's.
func WriteLeaksAs(w io.Writer, s *snapshot.Snapshot, reps []*leaks.LeakReport, h *info.HostMemory, json bool, o LeakOptions) error {
	if json {
		return WriteLeaksJSON(w, s, reps, hostview.NewJSON(h))
	}
	if err := WriteLeaks(w, s, reps, o); err != nil {
		return err
	}
	return hostview.WriteAfter(w, s, h)
}
