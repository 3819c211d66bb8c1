package export

import (
	"fmt"
	"strconv"

	"github.com/google/pprof/profile"

	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// DeviceState is one device's allocator state at a moment, with the replay
// it comes from: what [Profile] turns into samples.
type DeviceState struct {
	Result *replay.Result
	State  *replay.State
	// Moment names the moment in the profile's comments ("peak").
	Moment string
}

// Label is one --label key=value, put on every sample (pprof) or row
// (Parquet).
type Label struct{ Key, Value string }

// ProfileOptions says what [Profile] adds to every sample.
type ProfileOptions struct {
	// Source names the file in the comments, and, with FileLabel, in a
	// "file" label on every sample (for profiles merged from several
	// files).
	Source    string
	FileLabel bool
	Labels    []Label
}

// profileSampleTypes returns the sample types of the profiles Profile
// writes, in order; inuse_space is the default, as in Go heap profiles.
func profileSampleTypes() []*profile.ValueType {
	return []*profile.ValueType{
		{Type: "alloc_objects", Unit: "count"},
		{Type: "alloc_space", Unit: "bytes"},
		{Type: "inuse_objects", Unit: "count"},
		{Type: "inuse_space", Unit: "bytes"},
	}
}

// Profile builds a pprof heap-style profile of s:
//
//   - inuse_space and inuse_objects: the active_allocated blocks of each
//     device state (allocated_bytes.all.current at that moment, in bytes,
//     and the allocation count), by allocation stack;
//   - alloc_space and alloc_objects: every allocation of the device's trace,
//     and the blocks already allocated before its first entry, once each, so
//     they sum to allocated_bytes.all.allocated and allocation.all.allocated
//     as the replay figures them (lower bounds when the trace started late;
//     empty for a device without a trace, where they are unknown).
//
// Locations are leaf first (the allocator's call site first), one per
// distinct frame, with functions de-duplicated by (name, filename); frames
// _memory_viz's _frame_filter drops (the unwinder, CPython's evaluation
// loop) are left out, and a stack without frames is the one frame
// "<no stack recorded>". Samples are grouped by device, stack, stream and
// pool, which they carry as labels "device", "stream" (decimal cudaStream_t)
// and "pool" ("(0, 0)" for the default pools), with o.Labels; and where
// the file has them, by "record_function" (the innermost
// external_annotations range open at the allocation's alloc entry, e.g.
// "ProfilerStep#3") and "annotation" (the user_metadata of the annotate
// entries made on it, PyTorch 2.14's torch.cuda.memory._annotate_tensor,
// up to the moment for inuse_*, over the whole trace for alloc_*): pprof
// -tagfocus record_function=forward keeps one range. Comments say
// which moment was taken and whether the alloc_* figures are exact (a trace
// that started late gives lower bounds; none without a trace).
func Profile(s *snapshot.Snapshot, states []DeviceState, o ProfileOptions) (*profile.Profile, error) {
	p := &profile.Profile{
		SampleType:        profileSampleTypes(),
		DefaultSampleType: "inuse_space",
		PeriodType:        &profile.ValueType{Type: "space", Unit: "bytes"},
		Period:            1,
	}
	b := newProfileBuilder(s, p)
	type key struct {
		dev    int
		stack  snapshot.StackID
		stream uint64
		pool   snapshot.PoolID
		rf     string // the record_function range of the alloc entry
		annot  string // the annotate entries' label
	}
	samples := map[key]*profile.Sample{}
	var order []key
	sample := func(k key) *profile.Sample {
		if sm := samples[k]; sm != nil {
			return sm
		}
		lab := map[string][]string{
			"device": {strconv.Itoa(k.dev)},
			"stream": {strconv.FormatUint(k.stream, 10)},
			"pool":   {k.pool.String()},
		}
		if o.FileLabel {
			lab["file"] = []string{o.Source}
		}
		if k.rf != "" {
			lab["record_function"] = []string{k.rf}
		}
		if k.annot != "" {
			lab["annotation"] = []string{k.annot}
		}
		for _, l := range o.Labels {
			lab[l.Key] = append(lab[l.Key], l.Value)
		}
		sm := &profile.Sample{Location: b.stack(k.stack), Value: make([]int64, 4), Label: lab}
		samples[k] = sm
		order = append(order, k)
		return sm
	}
	p.Comments = append(p.Comments, "snapview export of "+o.Source)
	for _, ds := range states {
		r, st := ds.Result, ds.State
		al := newAnnotLabels(s, r)
		for i := range st.Segments {
			sg := &st.Segments[i]
			for _, blk := range sg.Blocks {
				if blk.State != snapshot.StateActiveAllocated {
					continue
				}
				k := key{dev: r.Device, stack: blk.Stack, stream: sg.Stream, pool: sg.Pool}
				if blk.Alloc >= 0 && blk.Alloc < len(r.Allocs) {
					a := &r.Allocs[blk.Alloc]
					k.rf, k.annot = al.rangeOf(a), al.annotationOf(a, st.Index)
				}
				sm := sample(k)
				sm.Value[2]++
				sm.Value[3] += blk.Size
			}
		}
		for i := range r.Allocs {
			if r.Stats.Known.History == stats.Unknown {
				break
			}
			a := &r.Allocs[i]
			sm := sample(key{dev: r.Device, stack: a.Stack, stream: a.Stream, pool: a.Pool,
				rf: al.rangeOf(a), annot: al.annotationOf(a, len(r.Allocated)-1)})
			sm.Value[0]++
			sm.Value[1] += a.Size
		}
		trust := "exact"
		switch {
		case r.Stats.Known.History == stats.Unknown:
			trust = "unknown (no trace: alloc_* are left empty)"
		case r.Seeded:
			trust = "lower bounds (the trace starts after the first allocation)"
		}
		at := "the state the file holds"
		if st.Index >= 0 && st.Entry != nil {
			at = fmt.Sprintf("after trace entry %d", st.Index)
			if st.Entry.TimeUS != 0 {
				at += fmt.Sprintf(" (time_us %d)", st.Entry.TimeUS)
			}
		}
		p.Comments = append(p.Comments, fmt.Sprintf("device %d: inuse_* at %s, %s; alloc_* over the trace: %s",
			r.Device, ds.Moment, at, trust))
		if st.Entry != nil && st.Entry.TimeUS != 0 {
			p.TimeNanos = max(p.TimeNanos, st.Entry.TimeUS*1000)
		}
		if n := len(r.Allocated); n > 0 {
			tr := s.Traces[r.Device]
			if tr[0].TimeUS != 0 {
				p.DurationNanos = max(p.DurationNanos, (tr[n-1].TimeUS-tr[0].TimeUS)*1000)
			}
		}
	}
	for _, k := range order {
		p.Sample = append(p.Sample, samples[k])
	}
	if err := p.CheckValid(); err != nil {
		return nil, fmt.Errorf("building the pprof profile: %w", err)
	}
	return p, nil
}

// DiffProfile returns cur minus base, as `pprof -diff_base=base cur` reads
// them: base's values negated, its samples labelled "pprof::base"="true",
// the two merged (github.com/google/pprof/internal/driver does the same).
func DiffProfile(cur, base *profile.Profile) (*profile.Profile, error) {
	base = base.Copy()
	base.Scale(-1)
	for _, sm := range base.Sample {
		if sm.Label == nil {
			sm.Label = map[string][]string{}
		}
		sm.Label["pprof::base"] = []string{"true"}
	}
	p, err := profile.Merge([]*profile.Profile{cur, base})
	if err != nil {
		return nil, fmt.Errorf("subtracting the base profile: %w", err)
	}
	return p, nil
}

// profileBuilder de-duplicates functions and locations.
type profileBuilder struct {
	s     *snapshot.Snapshot
	p     *profile.Profile
	funcs map[[2]string]*profile.Function
	locs  map[snapshot.FrameID]*profile.Location
	none  *profile.Location
	stks  map[snapshot.StackID][]*profile.Location
}

func newProfileBuilder(s *snapshot.Snapshot, p *profile.Profile) *profileBuilder {
	return &profileBuilder{s: s, p: p, funcs: map[[2]string]*profile.Function{},
		locs: map[snapshot.FrameID]*profile.Location{}, stks: map[snapshot.StackID][]*profile.Location{}}
}

func (b *profileBuilder) function(name, file string) *profile.Function {
	k := [2]string{name, file}
	if f := b.funcs[k]; f != nil {
		return f
	}
	// No SystemName: pprof demangles a name equal to it as C++, which
	// turns Python's <module> and <lambda> into "".
	f := &profile.Function{ID: uint64(len(b.p.Function) + 1), Name: name, Filename: file}
	b.p.Function = append(b.p.Function, f)
	b.funcs[k] = f
	return f
}

func (b *profileBuilder) location(fn *profile.Function, line int64) *profile.Location {
	l := &profile.Location{ID: uint64(len(b.p.Location) + 1), Line: []profile.Line{{Function: fn, Line: line}}}
	b.p.Location = append(b.p.Location, l)
	return l
}

// stack returns the locations of a stack, leaf first.
func (b *profileBuilder) stack(id snapshot.StackID) []*profile.Location {
	if locs, ok := b.stks[id]; ok {
		return locs
	}
	var locs []*profile.Location
	for _, fid := range b.s.Stack(id) {
		f := b.s.Frames[fid]
		if !frames.MemvizKeepsFrame(f) {
			continue
		}
		l := b.locs[fid]
		if l == nil {
			l = b.location(b.function(f.Name, f.Filename), f.Line)
			b.locs[fid] = l
		}
		locs = append(locs, l)
	}
	if len(locs) == 0 {
		if b.none == nil {
			b.none = b.location(b.function("<no stack recorded>", ""), 0)
		}
		locs = []*profile.Location{b.none}
	}
	b.stks[id] = locs
	return locs
}
