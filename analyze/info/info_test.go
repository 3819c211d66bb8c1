package info

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/corpus"

	"github.com/snapview/snapview/snapshot"
)

func TestRoundEntries(t *testing.T) {
	for n, want := range map[int]int{
		0: 0, 1: 0, 7: 0, 8: 1, 10: 1, 20: 1, 50: 1, 54: 0, 100: 1, 189: 0, 500: 1, 512: 1,
		1000: 1, 3000: 1, 5163: 0, 6486: 0, 100000: 1, 2000000: 1, 19136: 0,
	} {
		if got := RoundEntries(n); got != (want == 1) {
			t.Errorf("roundEntries(%d) = %t, want %t", n, got, want == 1)
		}
	}
}

func TestVersionHintString(t *testing.T) {
	v := func(minor int) Version { return Version{2, minor} }
	tests := []struct {
		min, max Version
		want     string
	}{
		{Version{}, Version{}, "unknown"},
		{v(9), Version{}, "2.9 or newer"},
		{Version{}, v(2), "older than 2.2"},
		{v(2), v(3), "2.2"},
		{v(3), v(5), "2.3 to 2.4"},
		{v(5), v(3), "inconsistent clues (a converted or hand-made file?)"},
		{v(5), v(5), "inconsistent clues (a converted or hand-made file?)"},
		{v(0), Version{3, 0}, "2.0 or newer, older than 3.0"},
	}
	for _, tt := range tests {
		h := VersionHint{Min: tt.min, Max: tt.max}
		if got := h.String(); got != tt.want {
			t.Errorf("VersionHint{%v, %v}.String() = %q, want %q", tt.min, tt.max, got, tt.want)
		}
	}
}

func TestIsCppFrame(t *testing.T) {
	tests := []struct {
		f      snapshot.Frame
		want   bool
		reason string
	}{
		{snapshot.Frame{Filename: "??", Name: "torch::unwind::unwind()"}, true, "unwinder frame"},
		{snapshot.Frame{Filename: "", Name: "gather_with_cpp"}, true, "empty file name, line 0"},
		{snapshot.Frame{Filename: "CUDACachingAllocator.cpp", Name: "c10::cuda::CUDACachingAllocator::malloc"}, true, "basename and a qualified name"},
		{snapshot.Frame{Filename: "/x/train.py", Line: 12, Name: "forward"}, false, "a Python frame"},
		{snapshot.Frame{Filename: "none", Name: "placeholder"}, false, "_profile_to_snapshot's placeholder"},
	}
	for _, tt := range tests {
		if got := isCppFrame(&tt.f); got != tt.want {
			t.Errorf("isCppFrame(%+v) = %t, want %t (%s)", tt.f, got, tt.want, tt.reason)
		}
	}
}

// stackSnap returns a one-device snapshot whose trace entries carry the
// given stacks (frames keys present); stack i>0 is one distinct frame.
func stackSnap(nstacks int, trace ...snapshot.TraceEntry) *snapshot.Snapshot {
	s := Snap(nil, trace...)
	for i := 1; i <= nstacks; i++ {
		s.Frames = append(s.Frames, snapshot.Frame{Filename: "/x/a.py", Line: int64(i), Name: "f"})
		s.Stacks = append(s.Stacks, []snapshot.FrameID{snapshot.FrameID(i - 1)})
	}
	return s
}

func withStack(e snapshot.TraceEntry, st snapshot.StackID) snapshot.TraceEntry {
	e.Stack, e.Flags = st, e.Flags|snapshot.FlagFrames
	return e
}

func TestInferContext(t *testing.T) {
	a, b := snapshot.Addr(0x1000), snapshot.Addr(0x2000)
	tests := []struct {
		name   string
		s      *snapshot.Snapshot
		want   Context
		reason string
	}{
		{"free site differs", stackSnap(2,
			withStack(Ev(Alloc, a, 512), 1), withStack(Ev(FreeRq, a, 512), 2), withStack(Ev(FreeOK, a, 512), 2)),
			ContextAll, "context='all' records the free site"},
		{"free carries alloc stack", stackSnap(2,
			withStack(Ev(Alloc, a, 512), 1), withStack(Ev(Alloc, b, 512), 2),
			withStack(Ev(FreeRq, a, 512), 1), withStack(Ev(FreeRq, b, 512), 2)),
			ContextAlloc, "context='alloc' copies the alloc stack onto frees"},
		{"empty free stack", stackSnap(1,
			withStack(Ev(Alloc, a, 512), 1), withStack(Ev(FreeRq, a, 512), 0)),
			ContextAll, "a free from a thread without Python frames differs from its alloc"},
		{"no pairs", stackSnap(1, withStack(Ev(FreeRq, a, 512), 1), withStack(Ev(FreeOK, a, 512), 1)),
			ContextAllocOrAll, "orphan frees cannot be compared"},
		{"no frames keys, no blocks", stackSnap(0, Ev(Alloc, a, 512), Ev(FreeRq, a, 512), Ev(FreeOK, a, 512)),
			ContextNoneOrState, "nothing live to show whether blocks had stacks"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Inspect(tt.s, nil, nil)
			if got := in.Recording.Context; got != tt.want {
				t.Errorf("Context = %q (%s), want %q (%s)", got, in.Recording.ContextWhy, tt.want, tt.reason)
			}
		})
	}
}

func TestInspectEmptyAndLegacy(t *testing.T) {
	empty := &snapshot.Snapshot{
		HasDeviceTraces: true, Traces: make([][]snapshot.TraceEntry, 4), HasAnnotations: true,
		Settings: &snapshot.AllocatorSettings{MaxSplitSize: -1}, Stacks: [][]snapshot.FrameID{nil},
		TopLevelKeys: []string{"segments", "device_traces", "allocator_settings", "external_annotations"},
	}
	in := Inspect(empty, nil, nil)
	if len(in.Devices) != 0 || !slices.Equal(in.IdleDevices, []int{0, 1, 2, 3}) {
		t.Errorf("empty 4-device file: Devices %v, IdleDevices %v; want none and [0 1 2 3]", in.Devices, in.IdleDevices)
	}
	if in.Recording.Enabled != EnabledOff || len(in.Warnings) != 1 || !strings.Contains(in.Warnings[0], "no segments and no trace entries") {
		t.Errorf("empty file: Enabled %q, warnings %q; want off and the empty-file warning (field report 13)", in.Recording.Enabled, in.Warnings)
	}
	if got := in.Version.String(); got != "2.5 or newer" {
		t.Errorf("empty file: version hint %q, want 2.5 or newer", got)
	}

	legacy := &snapshot.Snapshot{
		Legacy:   true,
		Segments: []snapshot.Segment{{Device: 1, Address: SegBase, TotalSize: 2 * MiB, Blocks: []snapshot.Block{Blk(SegBase, 2*MiB, 0, Inact)}}},
		Stacks:   [][]snapshot.FrameID{nil},
	}
	in = Inspect(legacy, nil, nil)
	if in.Recording.Enabled != EnabledUnknown || in.Version.String() != "unknown" || len(in.Devices) != 1 || in.Devices[0].Device != 1 {
		t.Errorf("legacy list: Enabled %q, version %q, devices %v; want unknown, unknown, [device 1]", in.Recording.Enabled, in.Version.String(), in.Devices)
	}
	if len(in.Warnings) == 0 || !strings.HasPrefix(in.Warnings[0], "No history: a bare segment list") {
		t.Errorf("legacy list: warnings %q, want the bare-segment-list warning first", in.Warnings)
	}
	for _, in := range []*Info{Inspect(empty, nil, nil), Inspect(legacy, nil, nil)} {
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "null") {
			t.Errorf("Info has a nil slice: %s", b)
		}
	}
}

// infoTruth is what is known about how one corpus file was recorded;
// empty fields are not checked.
type infoTruth struct {
	file       string
	enabled    Enabled
	stacks     Stacks
	context    Context
	maxEntries int   // 0: not checked
	fromStart  *bool // nil: not checked
	coverage   TraceCoverageKind
}

// consistent reports whether the inferred context agrees with the truth:
// the pairs alloc_or_all and none_or_state agree with either member.
func consistentContext(got, want Context) bool {
	switch got {
	case ContextAllocOrAll:
		return want == ContextAlloc || want == ContextAll
	case ContextNoneOrState:
		return want == ContextNone || want == ContextState
	}
	return got == want
}

// corpusTruth reads the ground truth of ../shared/snapshots: the
// torch2.11 scenarios' meta.json (history arguments and
// recorded_from_start), two_devices from gen/multigpu.py (default
// arguments, max_entries=100000), and the probes' names.
func corpusTruth(t *testing.T, dir string) []infoTruth {
	t.Helper()
	yes, no := true, false
	var out []infoTruth
	for _, m := range corpus.Match(t, dir, "torch2.11/*/meta.json", 16) {
		b, err := os.ReadFile(m)
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			History *struct {
				Enabled    string  `json:"enabled"`
				Context    *string `json:"context"`
				Stacks     string  `json:"stacks"`
				MaxEntries int     `json:"max_entries"`
			} `json:"history"`
			Truth struct {
				FromStart *bool `json:"recorded_from_start"`
			} `json:"ground_truth"`
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		tr := infoTruth{file: filepath.Join(filepath.Dir(m), "snapshot.pickle"), fromStart: meta.Truth.FromStart}
		h := meta.History
		switch {
		case h == nil:
			// torch.cuda.memory_snapshot(): a list without a trace.
			tr.enabled, tr.stacks, tr.context = EnabledUnknown, StacksUnknown, ContextUnknown
		case h.Enabled == "state":
			tr.enabled, tr.stacks, tr.context, tr.maxEntries = EnabledState, Stacks(h.Stacks), ContextState, 1
		default:
			tr.enabled, tr.stacks, tr.maxEntries = Enabled(h.Enabled), Stacks(h.Stacks), h.MaxEntries
			tr.context = ContextNone
			if h.Context != nil {
				tr.context = Context(*h.Context)
			}
			if tr.context == ContextNone {
				tr.stacks = StacksUnknown // no frame is recorded to tell
			}
		}
		out = append(out, tr)
	}
	if p := filepath.Join(dir, "torch2.11", "two_devices", "snapshot.pickle"); fileExists(p) {
		out = append(out, infoTruth{file: p, enabled: EnabledAll, stacks: StacksAll, context: ContextAll, maxEntries: 100000, fromStart: &yes})
	}
	probe := func(name string, tr infoTruth) {
		tr.file = filepath.Join(dir, "torch2.11-probe", name+".pickle")
		if fileExists(tr.file) {
			out = append(out, tr)
		}
	}
	probe("all_all", infoTruth{enabled: EnabledAll, stacks: StacksAll, context: ContextAll, fromStart: &yes})
	probe("all_python", infoTruth{enabled: EnabledAll, stacks: StacksPython, context: ContextAll, fromStart: &yes})
	probe("annotations", infoTruth{enabled: EnabledAll, fromStart: &yes})
	probe("context_alloc", infoTruth{enabled: EnabledAll, stacks: StacksPython, context: ContextAlloc})
	probe("context_none", infoTruth{enabled: EnabledAll, stacks: StacksUnknown, context: ContextNone})
	probe("context_state", infoTruth{enabled: EnabledAll, stacks: StacksPython, context: ContextState})
	probe("expandable", infoTruth{enabled: EnabledAll, fromStart: &yes})
	probe("graph_pool", infoTruth{enabled: EnabledAll, fromStart: &yes})
	// legacy_bool(trace_alloc_max_entries=1000, trace_alloc_record_context=True)
	probe("legacy_bool", infoTruth{enabled: EnabledAll, stacks: StacksPython, context: ContextAlloc, maxEntries: 1000})
	probe("max_entries_8", infoTruth{enabled: EnabledAll, maxEntries: 8, fromStart: &no, coverage: CoverageWrapped})
	probe("no_history", infoTruth{enabled: EnabledOff})
	probe("pre_existing", infoTruth{enabled: EnabledAll, fromStart: &no, coverage: CoverageLate})
	probe("state_only", infoTruth{enabled: EnabledState, context: ContextState, maxEntries: 1})
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestInspectGroundTruth checks the recording inference against how the
// corpus files were recorded, and counts the files it gets right.
func TestInspectGroundTruth(t *testing.T) {
	dir := Corpus(t)
	truths := corpusTruth(t, dir)
	if len(truths) == 0 {
		t.Skip("no ground truth in the shared corpus")
	}
	var right, fields, fieldsRight, ambiguous int
	for _, tr := range truths {
		name, _ := filepath.Rel(dir, tr.file)
		s, err := snapshot.Load(tr.file)
		if err != nil {
			t.Fatal(err)
		}
		in := Inspect(s, nil, nil)
		r := &in.Recording
		var wrong []string
		check := func(field string, ok bool, got, want any) {
			fields++
			if ok {
				fieldsRight++
				return
			}
			wrong = append(wrong, field)
			t.Errorf("%s: %s = %v, want %v", name, field, got, want)
		}
		if tr.enabled != "" {
			check("enabled", r.Enabled == tr.enabled, r.Enabled, tr.enabled)
		}
		if tr.stacks != "" {
			check("stacks", r.Stacks == tr.stacks, r.Stacks, tr.stacks)
		}
		if tr.context != "" {
			check("context", consistentContext(r.Context, tr.context), r.Context, tr.context)
			if r.Context != tr.context {
				ambiguous++
			}
		}
		if tr.maxEntries > 0 {
			ok := r.MaxEntries > 0 && (r.MaxEntries == tr.maxEntries || r.MaxEntriesAtLeast && r.MaxEntries <= tr.maxEntries)
			check("max_entries", ok, r.MaxEntries, tr.maxEntries)
		}
		for _, d := range in.Devices {
			if tr.fromStart != nil {
				check("from_start", (d.Coverage == CoverageFromStart) == *tr.fromStart, d.Coverage, *tr.fromStart)
			}
			if tr.coverage != "" {
				check("coverage", d.Coverage == tr.coverage, d.Coverage, tr.coverage)
			}
		}
		if len(wrong) == 0 {
			right++
		}
	}
	t.Logf("recording inference right on %d of %d files (%d of %d checked fields; %d contexts right but ambiguous)",
		right, len(truths), fieldsRight, fields, ambiguous)
}

// TestInspectPublicVersions: the public snapshots come from PyTorch 2.0 to
// 2.10 (../shared/README.md), so every version hint must admit a release
// in that range; the ones the field reports date must admit theirs.
func TestInspectPublicVersions(t *testing.T) {
	dir := Corpus(t)
	files := corpus.Match(t, dir, "public/*.pickle", 34)
	dated := map[string]Version{
		"p12-torch2.0-history-layout-oom.pickle": {2, 0},
		"p16-torch2.0-history-layout.pickle":     {2, 0},
	}
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		h := Inspect(s, nil, nil).Version
		name := filepath.Base(f)
		oldest, newest := Version{2, 0}, Version{2, 10}
		if h.Conflict() || newest.less(h.Min) || !h.Max.IsZero() && !oldest.less(h.Max) {
			t.Errorf("%s: version hint %q excludes 2.0 to 2.10", name, h.String())
		}
		if v, ok := dated[name]; ok && (v.less(h.Min) || !h.Max.IsZero() && !v.less(h.Max)) {
			t.Errorf("%s: version hint %q excludes %s", name, h.String(), v)
		}
	}
}

// TestRecordedMaxEntries: allocator_settings from PyTorch after 2.11 may
// carry max_entries and the overflow flag (#179276); they beat the guess.
func TestRecordedMaxEntries(t *testing.T) {
	a := snapshot.Addr(0x1000)
	// An orphan free: the trace misses the start; 3 entries is no round
	// number, so the guess is "started late".
	s := Snap(nil, Ev(FreeRq, a, 512), Ev(FreeOK, a, 512), Ev(Alloc, a+512, 512))
	if in := Inspect(s, nil, nil); in.Devices[0].Coverage != CoverageLate || !in.Recording.MaxEntriesAtLeast {
		t.Fatalf("without the settings: coverage %q, max_entries at least %t; want started_late, true", in.Devices[0].Coverage, in.Recording.MaxEntriesAtLeast)
	}
	s.Settings.Raw = []snapshot.KeyValue{{Key: "trace_alloc_max_entries", Value: "3"}, {Key: "trace_alloc_overflowed", Value: "True"}}
	in := Inspect(s, nil, nil)
	if in.Devices[0].Coverage != CoverageWrapped || in.Recording.MaxEntries != 3 || in.Recording.MaxEntriesAtLeast {
		t.Errorf("with the settings: coverage %q, max_entries %d (at least %t); want wrapped, exactly 3",
			in.Devices[0].Coverage, in.Recording.MaxEntries, in.Recording.MaxEntriesAtLeast)
	}
	if got := in.Version.Min; got != (Version{2, 12}) {
		t.Errorf("version hint minimum %v, want 2.12 (fields added after 2.11)", got)
	}
}

// TestInspectFullReplaysEqualsInspect checks that Inspect, given the
// full replays of some devices (the others replayed StatsOnly), gives
// the Info of Inspect without replays of its own.
func TestInspectFullReplaysEqualsInspect(t *testing.T) {
	inputs := []*snapshot.Snapshot{SyntheticChurn(5000)}
	for _, ss := range SharedSnapshots(t) {
		s, err := snapshot.Load(ss.Path)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, s)
	}
	for i, s := range inputs {
		want := Inspect(s, nil, nil)
		devs := s.Devices()
		for k := 0; k <= len(devs); k++ {
			full := devs[:k]
			replayed := func(d int) (*replay.Result, error) {
				mode := replay.StatsOnly
				if slices.Contains(full, d) {
					mode = replay.Full
				}
				return replay.Run(s, d, replay.Options{Mode: mode})
			}
			if got := Inspect(s, replayed, nil); !reflect.DeepEqual(got, want) {
				t.Errorf("input %d, %d devices replayed: Inspect with full replays differs:\n got %+v\nwant %+v", i, k, got, want)
			}
		}
	}
}
