package info

import (
	"fmt"
	"slices"
	"strings"

	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// Version is a PyTorch release, major.minor.
type Version struct{ Major, Minor int }

// IsZero reports whether v is unset.
func (v Version) IsZero() bool { return v == Version{} }

// String returns "2.11", or "" when v is unset.
func (v Version) String() string {
	if v.IsZero() {
		return ""
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

func (v Version) less(w Version) bool {
	return v.Major < w.Major || v.Major == w.Major && v.Minor < w.Minor
}

// VersionHint is a range of PyTorch releases consistent with what the
// file holds. It is a hint, not a certainty: the release a feature first
// shipped in is dated from its pull request (docs/format.md, "Format
// versions"), and a converted or hand-made file can carry any keys.
type VersionHint struct {
	// Min is the oldest release consistent with the file (inclusive),
	// zero when no clue bounds it from below. Max is the first release the
	// file is too old for (exclusive), zero when open.
	Min, Max Version
	// Clues are the facts the range comes from, in a fixed order.
	Clues []VersionClue
}

// Conflict reports whether the clues contradict each other (Min ≥ Max).
func (h *VersionHint) Conflict() bool {
	return !h.Min.IsZero() && !h.Max.IsZero() && !h.Min.less(h.Max)
}

// String describes the range: "2.11 or newer", "older than 2.2",
// "2.3 to 2.4", "2.2", "unknown".
func (h *VersionHint) String() string {
	switch {
	case h.Conflict():
		return "inconsistent clues (a converted or hand-made file?)"
	case h.Min.IsZero() && h.Max.IsZero():
		return "unknown"
	case h.Max.IsZero():
		return h.Min.String() + " or newer"
	case h.Min.IsZero():
		return "older than " + h.Max.String()
	}
	last := Version{h.Max.Major, h.Max.Minor - 1}
	if h.Max.Minor == 0 {
		// The release before x.0 is not known by number.
		return fmt.Sprintf("%s or newer, older than %s", h.Min, h.Max)
	}
	if last == h.Min {
		return h.Min.String()
	}
	return fmt.Sprintf("%s to %s", h.Min, last)
}

// VersionClue is one fact about the file and the bound it puts on the
// PyTorch version.
type VersionClue struct {
	// Clue says what the file shows.
	Clue string
	// AtLeast and Before are the bounds this clue sets (zero: none).
	AtLeast, Before Version
	// Source names the PyTorch change the bound comes from.
	Source string
}

// Bound returns "≥2.3", "<2.2" or "" for a clue without a bound.
func (c *VersionClue) Bound() string {
	switch {
	case !c.AtLeast.IsZero():
		return "≥" + c.AtLeast.String()
	case !c.Before.IsZero():
		return "<" + c.Before.String()
	}
	return ""
}

// isNewerKey reports whether a decoder-unknown path is one PyTorch main
// added after 2.11 (snapshot-format.md §1.2, §1.5, §2.1).
func isNewerKey(name string) bool {
	switch name {
	case "host_segments", "host_traces", "action:annotate",
		"device_traces[][].pool_id", "device_traces[][].internal_metadata",
		"allocator_settings.trace_alloc_max_entries", "allocator_settings.trace_alloc_overflowed",
		"trace_alloc_max_entries", "trace_alloc_overflowed":
		return true
	}
	return false
}

// InferVersion returns the range of PyTorch releases consistent with what
// s holds ([Info].Version): it collects the version clues of s (the
// top-level keys, the trace entries' fields, the segments' and the keys
// newer or unknown to snapview) and bounds the range by them.
func InferVersion(s *snapshot.Snapshot) VersionHint {
	var h VersionHint
	h.keyClues(s)
	mapped := h.traceClues(s)
	h.segmentClues(s, mapped)
	h.unknownClues(s)
	h.bound()
	return h
}

// atLeast adds a clue that the file comes from 2.minor or later.
func (h *VersionHint) atLeast(minor int, clue, source string) {
	h.Clues = append(h.Clues, VersionClue{Clue: clue, AtLeast: Version{2, minor}, Source: source})
}

// before adds a clue that the file comes from a release before 2.minor.
func (h *VersionHint) before(minor int, clue, source string) {
	h.Clues = append(h.Clues, VersionClue{Clue: clue, Before: Version{2, minor}, Source: source})
}

// keyClues adds the clues of the snapshot's top-level keys.
func (h *VersionHint) keyClues(s *snapshot.Snapshot) {
	if s.Legacy {
		h.Clues = append(h.Clues, VersionClue{
			Clue:   "a bare list of segments: torch.cuda.memory_snapshot() of any release, or _snapshot() of 1.13",
			Source: "snapshot-format.md §2.1",
		})
	} else {
		if s.HasDeviceTraces {
			h.atLeast(0, "device_traces key", "#86241")
		}
		if s.Settings != nil {
			h.atLeast(3, "allocator_settings key", "#119404")
		} else {
			h.before(3, "no allocator_settings key", "#119404")
		}
		if s.HasAnnotations {
			h.atLeast(5, "external_annotations key", "#129072, #130964")
		} else if s.Settings != nil {
			h.before(5, "no external_annotations key", "#129072, #130964")
		}
	}
}

// traceClues adds the clues of the trace entries' fields; mapped says
// whether some entry maps or unmaps pages of an expandable segment.
func (h *VersionHint) traceClues(s *snapshot.Snapshot) (mapped bool) {
	var entries, timed, compiled, metadata, annotated int
	for _, tr := range s.Traces {
		for i := range tr {
			e := &tr[i]
			entries++
			if e.Flags&snapshot.FlagTime != 0 {
				timed++
			}
			if e.CompileContext != 0 {
				compiled++
			}
			if e.UserMetadata != 0 {
				metadata++
			}
			if e.Action == snapshot.ActionSegmentMap || e.Action == snapshot.ActionSegmentUnmap {
				mapped = true
			}
			if e.Action == snapshot.ActionAnnotate {
				annotated++
			}
		}
	}
	if annotated > 0 {
		h.atLeast(12, "annotate trace entries (torch.cuda.memory._annotate_tensor)", "#190575")
	}
	switch {
	case timed > 0:
		h.atLeast(2, "time_us on trace entries", "#112266")
	case entries > 0:
		h.before(2, "trace entries without time_us", "#112266")
	}
	switch {
	case compiled > 0:
		h.atLeast(8, "compile_context on trace entries", "#152707")
	case entries > 0:
		h.before(8, "trace entries without compile_context", "#152707")
	}
	switch {
	case s.FieldCount("device_traces[][].user_metadata") > 0:
		h.atLeast(10, "user_metadata on trace entries", "#165490")
	case metadata > 0:
		h.atLeast(10, "non-empty user_metadata on trace entries", "#165490")
	case entries > 0 && compiled > 0:
		h.before(10, "trace entries without user_metadata", "#165490")
	}
	if s.Settings != nil && slices.ContainsFunc(s.Settings.Raw, func(kv snapshot.KeyValue) bool {
		return kv.Key == "graph_capture_record_stream_reuse"
	}) {
		// snapshot-format.md §2.1 dates the key to 2.11, but public
		// snapshots from releases up to 2.10 carry it; PR #158352
		// (merged 2025-08) points at 2.9.
		h.atLeast(9, "graph_capture_record_stream_reuse in allocator_settings", "#158352")
	}
	return mapped
}

// segmentClues adds the clues of the segments and blocks (mapped: the
// trace maps pages of an expandable segment).
func (h *VersionHint) segmentClues(s *snapshot.Snapshot, mapped bool) {
	var segStacks, inactiveStacks int
	var pooled, expandable bool
	for i := range s.Segments {
		seg := &s.Segments[i]
		if seg.Stack != snapshot.NoStack {
			segStacks++
		}
		pooled = pooled || !seg.Pool.IsDefault()
		expandable = expandable || seg.Expandable
		for j := range seg.Blocks {
			if seg.Blocks[j].State == snapshot.StateInactive && seg.Blocks[j].Stack != snapshot.NoStack {
				inactiveStacks++
			}
		}
	}
	if segStacks > 0 {
		h.atLeast(1, "stacks on segments", "#106079")
	}
	if pooled {
		h.atLeast(1, "private pool ids on segments", "#106079")
	}
	if expandable || mapped {
		h.atLeast(1, "expandable segments", "#96995")
	}
	if cppFrames(s) > 0 {
		h.atLeast(1, "C++ frames inside frame lists", "#95357")
	}
	blocks := 0
	for i := range s.Segments {
		blocks += len(s.Segments[i].Blocks)
	}
	switch {
	case s.FieldCount("segments[].blocks[].history") > 0:
		h.before(1, "blocks carry history lists: the 2.0 block layout", "#106079")
	case blocks > 0 && len(s.Fields) > 0 && s.FieldCount("segments[].blocks[].address") == 0:
		h.before(1, "blocks without addresses: the 2.0 block layout", "#106079")
	case inactiveStacks > 0:
		h.before(1, fmt.Sprintf("%s keep a stack: the block history layout", units.Plural(inactiveStacks, "free block")), "#106079")
	}
}

// unknownClues adds the clues of keys newer than 2.11 and of keys this
// snapview does not know.
func (h *VersionHint) unknownClues(s *snapshot.Snapshot) {
	var newer, unknown []string
	if s.Settings != nil {
		for _, kv := range s.Settings.Raw {
			if isNewerKey("allocator_settings." + kv.Key) {
				newer = append(newer, "allocator_settings."+kv.Key)
			}
		}
	}
	for _, u := range s.Unknown {
		switch {
		case strings.HasSuffix(u.Name, ".cpp_frames"):
			h.before(1, "cpp_frames strings on trace entries", "#86145, #95357")
		case isNewerKey(u.Name):
			newer = append(newer, u.Name)
		default:
			unknown = append(unknown, u.Name)
		}
	}
	if slices.Contains(s.TopLevelKeys, "host_segments") || slices.Contains(s.TopLevelKeys, "host_traces") {
		newer = append(newer, "host_segments/host_traces")
	}
	if len(newer) > 0 {
		h.atLeast(12, "fields added after 2.11: "+strings.Join(newer, ", "), "#177717, #179276, #182407, #190575, #193432")
	}
	if len(unknown) > 0 {
		h.Clues = append(h.Clues, VersionClue{Clue: "fields this snapview does not know: " + strings.Join(unknown, ", ")})
	}
}

// bound sorts the clues and sets Min and Max from them.
func (h *VersionHint) bound() {
	// Lower bounds first, newest last; then upper bounds, oldest first;
	// then clues without a bound.
	rank := func(c VersionClue) (int, Version) {
		switch {
		case !c.AtLeast.IsZero():
			return 0, c.AtLeast
		case !c.Before.IsZero():
			return 1, c.Before
		}
		return 2, Version{}
	}
	slices.SortStableFunc(h.Clues, func(a, b VersionClue) int {
		ra, va := rank(a)
		rb, vb := rank(b)
		switch {
		case ra != rb:
			return ra - rb
		case va.less(vb):
			return -1
		case vb.less(va):
			return 1
		}
		return 0
	})
	for _, c := range h.Clues {
		if !c.AtLeast.IsZero() && (h.Min.IsZero() || h.Min.less(c.AtLeast)) {
			h.Min = c.AtLeast
		}
		if !c.Before.IsZero() && (h.Max.IsZero() || c.Before.less(h.Max)) {
			h.Max = c.Before
		}
	}
	if h.Clues == nil {
		h.Clues = []VersionClue{}
	}
}
