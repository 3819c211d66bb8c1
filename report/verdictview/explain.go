package verdictview

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analyze/explain"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/hostview"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/snapshot"
)

// ExplainView is what `snapview explain` prints for some devices: each
// finding worded once (verdict, evidence, stacks, action), so that the
// text, the JSON, the first lines of `state --at oom` and the report page
// say the same.
type ExplainView struct {
	Devices []ExplainDevice
	// Host is the file's pinned host memory as every view's --json gives
	// it (hostview.NewJSON of analysis.File.Host), nil when it has none.
	Host *hostview.JSON
	snap *snapshot.Snapshot
}

// ExplainDevice is the worded findings of one device.
type ExplainDevice struct {
	Device   int
	Findings []ExplainFinding
}

// ExplainFinding is one finding with its words.
type ExplainFinding struct {
	explain.Finding
	// Verdict is the one-line conclusion; Evidence the figures that prove
	// it, each marked as every view marks it ("at least" for a lower
	// bound, "?" for unknown); Action what to do ("" when nothing).
	Verdict  string
	Evidence []string
	Action   string
	// Where names each stack of Stacks in one line (its innermost user
	// frame); BlockerWhere each blocker's.
	Where        []string
	BlockerWhere []string
	// MarkerWhere names the repeating allocation the steps were found
	// from (Steps.Marker), "" when they were not.
	MarkerWhere string
}

// NewExplainView words the findings of devs, from s.
func NewExplainView(s *snapshot.Snapshot, devs []*explain.Device) *ExplainView {
	v := &ExplainView{Devices: []ExplainDevice{}, snap: s}
	ft := stacks.NewFrameTable(s)
	for _, d := range devs {
		ed := ExplainDevice{Device: d.Device, Findings: []ExplainFinding{}}
		for _, f := range d.Findings {
			ef := ExplainFinding{Finding: f}
			for _, id := range f.Stacks {
				ef.Where = append(ef.Where, ft.Where(id))
			}
			for _, b := range f.Blockers {
				ef.BlockerWhere = append(ef.BlockerWhere, ft.Where(b.Stack))
			}
			if f.Steps.Source == steps.StepsPattern && f.Steps.Marker > 0 {
				ef.MarkerWhere = ft.Where(f.Steps.Marker)
			}
			wordFinding(&ef)
			if w := d.Whatif; w != nil && (f.Kind == explain.KindOOMCap || f.Kind == explain.KindOOMDevice || f.Kind == explain.KindOOMFragmentation) {
				// The what-if verdict whatif, state --at oom and the
				// page's OOM marker print, over the caps the file allows.
				ef.Action = "snapview whatif: " + strings.TrimSuffix(WhatifCapVerdict(w), ".")
			}
			ed.Findings = append(ed.Findings, ef)
		}
		v.Devices = append(v.Devices, ed)
	}
	return v
}

// figText formats figure name of f as the text views do: bytes as
// FormatBytes, counts with separators, "at least" before a lower bound,
// "?" for an unknown figure.
func figText(f *explain.Finding, name string) string {
	g, ok := f.Figure(name)
	if !ok {
		return "?"
	}
	return figureText(g)
}

func figureText(g explain.Figure) string {
	if g.Exactness == stats.Unknown {
		return "?"
	}
	var s string
	switch g.Unit {
	case explain.Bytes:
		s = units.Bytes(g.Value)
	case explain.Micros:
		s = units.Micros(g.Value)
	default:
		s = units.Int(g.Value)
	}
	if g.Exactness == stats.LowerBound {
		s = "at least " + s
	}
	return s
}

func figValue(f *explain.Finding, name string) int64 {
	g, _ := f.Figure(name)
	return g.Value
}

// explainPool names a finding's pool: "large pool, stream 0".
func explainPool(f *explain.Finding) string {
	p := kit.PoolLabel(f.Large, f.Pool, false)
	return fmt.Sprintf("%s pool, stream %d", p, f.Stream)
}

// settingAction is the action naming whatif's setting for f: "try" it
// where whatif finds it fits at every cap the file allows, else what
// whatif found (see settingOutcome).
func settingAction(f *explain.Finding) string {
	if f.Setting == "" {
		return ""
	}
	if !f.SettingFits {
		return "PYTORCH_CUDA_ALLOC_CONF=" + f.Setting + " " + settingOutcome(f)
	}
	return fmt.Sprintf("try PYTORCH_CUDA_ALLOC_CONF=%s: snapview whatif simulates the whole trace under it at a peak reserved of %s, no OOM",
		f.Setting, units.Bytes(f.SettingPeak))
}

// settingOutcome says what whatif found for a setting that does not fit
// at every cap the file allows: it fits from a cap above all of them, or
// within them (at some only), or at none; the cap as whatif words it.
func settingOutcome(f *explain.Finding) string {
	if f.SettingFrom > 0 {
		need := fromText(whatif.SettingFit{From: f.SettingFrom, FromLow: f.SettingFromLow, FromExact: f.SettingFromLow == 0})
		if f.SettingFromAbove {
			return "does not fit under the cap: snapview whatif finds it fits only from a cap of " + need + ", above the caps the file allows"
		}
		return "fits at only some of the caps the file allows: snapview whatif finds it fits only from a cap of " + need
	}
	return "does not fit under the cap: snapview whatif finds an OOM under it at every cap the file allows"
}

// wordFinding sets ef's verdict, evidence and action from its kind and
// figures: one function per kind of finding.
func wordFinding(ef *ExplainFinding) {
	w := wording{ef: ef, f: &ef.Finding}
	switch w.f.Kind {
	case explain.KindOOMFragmentation, explain.KindOOMCap, explain.KindOOMDevice:
		w.oom()
	case explain.KindBlockers:
		w.blockers()
	case explain.KindAvoidableMalloc:
		w.avoidableMalloc()
	case explain.KindReservedGap:
		w.reservedGap()
	case explain.KindPool:
		w.pool()
	case explain.KindLeak:
		w.leak()
	case explain.KindNoLeak:
		w.noLeak()
	case explain.KindGrowthUnjudged:
		w.growthUnjudged()
	case explain.KindRecording:
		w.recording()
	}
}

// wording is one finding being worded: the finding's figures and the
// ExplainFinding its verdict, evidence and action go into.
type wording struct {
	ef *ExplainFinding
	f  *explain.Finding
}

// fig is the finding's figure name as text.
func (w wording) fig(name string) string { return figText(w.f, name) }

// ev adds "label figure" to the evidence when the finding has figure name.
func (w wording) ev(label, name string) {
	if _, ok := w.f.Figure(name); ok {
		w.ef.Evidence = append(w.ef.Evidence, label+" "+w.fig(name))
	}
}

// oom words an OOM: fragmentation, the process's cap, or a full device.
func (w wording) oom() {
	ef, f := w.ef, w.f
	head := fmt.Sprintf("OOM at entry %s: a %s request (%s) failed", units.Int(int64(f.Entry)), w.fig("request_bytes"), explainPool(f))
	switch f.Kind {
	case explain.KindOOMFragmentation:
		ef.Verdict = fmt.Sprintf("%s with %s cached free in its pool, in blocks of at most %s: the allocator's cache is fragmented; the device was not full (%s free)",
			head, w.fig("free_in_pool_bytes"), w.fig("largest_free_bytes"), w.fig("device_free_bytes"))
	case explain.KindOOMCap:
		ef.Verdict = fmt.Sprintf("%s while the device had %s free: the process hit its own limit, %s, not the device's",
			head, w.fig("device_free_bytes"), w.capText())
	default:
		ef.Verdict = fmt.Sprintf("%s: the device had only %s free", head, w.fig("device_free_bytes"))
	}
	w.ev("request", "request_bytes")
	w.ev("free on the device (cudaMemGetInfo)", "device_free_bytes")
	w.ev("cached free in the pool", "free_in_pool_bytes")
	w.ev("largest cached free block", "largest_free_bytes")
	w.ev("reserved", "reserved_bytes")
	w.ev("allocated", "allocated_bytes")
	w.ev("cap", "cap_bytes")
	w.ev("cap from", "cap_min_bytes")
	w.ev("cap to", "cap_max_bytes")
	w.ev("device capacity (OOM message)", "device_capacity_bytes")
	w.ev("in use beyond PyTorch's reserved (OOM message)", "non_pytorch_bytes")
	w.ev("other processes (OOM message)", "other_processes_bytes")
	w.ev("needed with no cap (peak reserved)", "uncapped_peak_reserved_bytes")
	ef.Action = w.oomAction()
}

// capText names the cap an OOM hit: one figure, a range, or neither.
func (w wording) capText() string {
	switch {
	case hasFig(w.f, "cap_bytes"):
		return "the cap " + w.fig("cap_bytes") + " (" + capSourceText(w.f.CapSource) + ")"
	case hasFig(w.f, "cap_min_bytes"):
		return fmt.Sprintf("a cap from %s to %s (%s)", w.fig("cap_min_bytes"), w.fig("cap_max_bytes"), capSourceText(w.f.CapSource))
	}
	return "the process's cap"
}

// oomAction is what to do about an OOM: the setting whatif found, or
// needing less memory (or more of it) when no setting avoids it.
func (w wording) oomAction() string {
	f := w.f
	switch {
	case f.Setting != "":
		return settingAction(f)
	case f.Kind == explain.KindOOMDevice:
		action := "no setting snapview tries avoids it (snapview whatif): the device was full; need less memory (smaller batch, activation checkpointing)"
		if hasFig(f, "uncapped_peak_reserved_bytes") {
			action += " or a device with at least " + w.fig("uncapped_peak_reserved_bytes") + " for PyTorch (the run's need with no limit)"
		}
		return action
	case hasFig(f, "uncapped_peak_reserved_bytes"):
		return "no setting snapview tries avoids it (snapview whatif): raise the cap to at least " +
			w.fig("uncapped_peak_reserved_bytes") + " or need less memory (smaller batch, activation checkpointing)"
	}
	return "no setting snapview tries avoids it (snapview whatif): need less memory (smaller batch, activation checkpointing)"
}

// blockers words the live blocks behind an OOM: those that cut the free
// space a request needed (mode "contiguity"), or those pinning segments
// the retry could not release.
func (w wording) blockers() {
	ef, f := w.ef, w.f
	if f.Mode == "contiguity" {
		ef.Verdict = fmt.Sprintf("%s (%s) cut the free space the request needed: without them a free block of %s would have held the %s request",
			units.Plural(int(figValue(f, "blocking_allocations")), "live allocation"), w.fig("blocking_bytes"),
			units.Bytes(figValue(f, "stranded_bytes")+figValue(f, "blocking_bytes")), w.fig("request_bytes"))
		w.ev("blocking allocations", "blocking_allocations")
		w.ev("their bytes", "blocking_bytes")
		w.ev("free bytes they strand", "stranded_bytes")
		ef.Action = "allocate these before the temporaries around them or free them sooner"
		switch {
		case f.Setting == "":
			ef.Action += "; or try expandable_segments:True"
		case f.SettingFits:
			ef.Action += "; or " + settingAction(f)
		default:
			ef.Action += "; " + f.Setting + " would grow the pool in place, but it " + settingOutcome(f)
		}
		return
	}
	ef.Verdict = fmt.Sprintf("%s (%s) could not be given back to the device before the retry: live blocks pin them, stranding %s free",
		units.Plural(int(figValue(f, "pinned_segments")), "partly free segment"), w.fig("pinned_segment_bytes"), w.fig("stranded_bytes"))
	w.ev("pinned segments", "pinned_segments")
	w.ev("their bytes", "pinned_segment_bytes")
	w.ev("free bytes they strand", "stranded_bytes")
	ef.Action = "the blockers placed long-lived blocks inside cached segments, splitting them; allocate them first, or keep them out of the cache's blocks"
	if f.Setting != "" {
		ef.Action += "; " + settingAction(f)
	}
}

// avoidableMalloc words the segment_allocs made while the pool's cached
// free bytes covered the request.
func (w wording) avoidableMalloc() {
	ef, f := w.ef, w.f
	were := "were"
	if figValue(f, "avoidable_segment_allocs") == 1 {
		were = "was"
	}
	ef.Verdict = fmt.Sprintf("%s of %s (%s) %s made while the pool's cached free bytes covered the request, in pieces too small",
		units.Plural(int(figValue(f, "avoidable_segment_allocs")), "segment_alloc"), w.fig("segment_allocs"), w.fig("avoidable_segment_bytes"), were)
	w.ev("avoidable segment_allocs", "avoidable_segment_allocs")
	w.ev("their bytes", "avoidable_segment_bytes")
	w.ev("first at entry", "first_entry")
	w.ev("largest requests examined", "examined")
	w.ev("of them with no segment a few blocks could have freed", "examined_without_blockers")
	// The setting, when the finding has one, is whatif's row for
	// expandable_segments:True under the file's cap: recommended only
	// where it fits at every cap the file allows, else what whatif found.
	switch {
	case f.Setting == "":
		ef.Action = "expandable_segments:True lets the pool grow in place instead of adding segments"
	case f.SettingFits:
		ef.Action = "expandable_segments:True lets the pool grow in place instead of adding segments; " + settingAction(f)
	default:
		ef.Action = fmt.Sprintf("%s would let the pool grow in place instead of adding segments, but it %s",
			f.Setting, settingOutcome(f))
	}
	if len(f.Blockers) > 0 {
		ef.Action = "the blockers above (found at the largest requests) split the cache; " + ef.Action
	}
}

// reservedGap words a peak reserved far above the peak allocated, with
// where the cache sat at the reserved peak.
func (w wording) reservedGap() {
	ef, f := w.ef, w.f
	pct := int64(0)
	if r := figValue(f, "peak_reserved_bytes"); r > 0 {
		pct = 100 * figValue(f, "gap_bytes") / r
	}
	ef.Verdict = fmt.Sprintf("reserved far above allocated: peak reserved %s, %s (%d%%) above the peak allocated %s",
		w.fig("peak_reserved_bytes"), w.fig("gap_bytes"), pct, w.fig("peak_allocated_bytes"))
	if f.PoolSet {
		ef.Verdict += fmt.Sprintf("; at the reserved peak (entry %s) most of the cache is in the %s",
			units.Int(int64(f.Entry)), explainPool(f))
	}
	w.ev("peak reserved", "peak_reserved_bytes")
	w.ev("peak allocated", "peak_allocated_bytes")
	w.ev("at the reserved peak: reserved", "reserved_bytes")
	w.ev("allocated", "allocated_bytes")
	w.ev("split remainders torch cannot release (inactive_split_bytes)", "non_releasable_bytes")
	w.ev("pending free on other streams", "pending_free_bytes")
	w.ev("free in private pools", "private_pool_free_bytes")
	w.ev("free in that pool", "top_pool_free_bytes")
	w.ev("in free blocks", "top_pool_free_blocks")
	w.ev("the largest", "top_pool_largest_free_bytes")
	w.ev("segments held by small live blocks (mostly free)", "pinned_segments")
	w.ev("their bytes", "pinned_segment_bytes")
	w.ev("free bytes they strand", "stranded_bytes")
	ef.Action = settingAction(f)
}

// pool words a private pool (a CUDA graph's or a MemPool's): its
// high-water, what was active, and whether it was abandoned.
func (w wording) pool() {
	ef, f := w.ef, w.f
	if hasFig(f, "reserved_high_water_bytes") {
		ef.Verdict = fmt.Sprintf("private pool %s: reserved up to %s, %s active at the allocated peak, %s at the end, %s at the dump",
			f.Pool, w.fig("reserved_high_water_bytes"), w.fig("active_at_peak_bytes"), w.fig("active_at_end_bytes"),
			units.Plural(int(figValue(f, "segments_at_end")), "segment"))
	} else {
		ef.Verdict = fmt.Sprintf("private pool %s: %s reserved in %s at the dump, %s of it allocated (no trace: no high-water)",
			f.Pool, w.fig("reserved_at_end_bytes"), units.Plural(int(figValue(f, "segments_at_end")), "segment"), w.fig("active_at_end_bytes"))
	}
	if f.Note == "abandoned" {
		ef.Verdict += ": abandoned (segments, no active block)"
		ef.Action = "its memory stays reserved until the CUDA graph or MemPool that owns it is freed"
	}
	w.ev("reserved high-water", "reserved_high_water_bytes")
	w.ev("active at the allocated peak", "active_at_peak_bytes")
	w.ev("active at the end", "active_at_end_bytes")
	w.ev("segments at the dump", "segments_at_end")
	w.ev("reserved at the dump", "reserved_at_end_bytes")
	w.ev("allocations", "allocations")
	if f.Context != "" {
		ef.Evidence = append(ef.Evidence, "compile context "+strconv.Quote(f.Context))
	}
}

// leak words a stack whose live bytes grew step after step.
func (w wording) leak() {
	ef, f := w.ef, w.f
	ef.Verdict = fmt.Sprintf("leak: %s (%s live in %s)", f.Note, w.fig("bytes"),
		units.Plural(int(figValue(f, "count")), "allocation"))
	// bytes and count are the stack's; live_bytes every allocation's
	// on the device (leaks --json's group bytes and live_bytes).
	w.ev("live in this stack", "bytes")
	w.ev("allocations", "count")
	w.ev("other stacks that look like leaks", "other_suspicious_groups")
	w.ev("score", "score")
	w.ev(stepUnit(f)+"s it grew in", "growth_steps")
	w.ev("live on the device (all stacks)", "live_bytes")
	ef.Action = "look at the stack below: what keeps these allocations alive (a list that grows, a cache, a tensor kept with its graph)"
}

// noLeak words a trace whose every stack returns to its level each step.
func (w wording) noLeak() {
	ef, f := w.ef, w.f
	ef.Verdict = fmt.Sprintf("no leak: every stack returns to its level step after step (%s found from %s)",
		units.Plural(int(figValue(f, "steps")), "step"), stepSourceText(ef))
	if f.Note == "seeded" {
		ef.Verdict += "; allocations older than the trace carry no growth evidence"
	}
	w.ev("steps", "steps")
	w.ev("live on the device", "live_bytes")
}

// growthUnjudged words a trace with no training steps to judge growth by:
// none found, or only a few repetitions of one allocation
// (steps.Steps.TooFewPatternSteps), which a loop inside one pass makes as
// well.
func (w wording) growthUnjudged() {
	ef, f := w.ef, w.f
	over := "the trace"
	if f.Steps.TooFewPatternSteps() {
		ef.Verdict = fmt.Sprintf("growth cannot be judged: only %s found, from one allocation repeating %s (no record_function range), "+
			"and under %d such repetitions are as likely a loop inside one pass as training steps",
			units.Plural(int(figValue(f, "steps")), "step"), markerText(ef), steps.MinPatternSteps)
		over = "them"
	} else {
		ef.Verdict = fmt.Sprintf("growth cannot be judged: no training steps found (the trace was cut into %s)",
			units.Plural(int(figValue(f, "steps")), "equal slice"))
	}
	if f.Note == "grew" {
		ef.Verdict += fmt.Sprintf("; %s in %s grew over %s and were never freed, which one long step (a forward pass) does too",
			w.fig("bytes"), units.Plural(int(figValue(f, "count")), "allocation"), over)
	}
	w.ev("live on the device", "live_bytes")
	ef.Action = "mark steps with torch.profiler.record_function (or profiler.step()), then run snapview leaks"
}

// recording words how much the recording could see, and how to record
// the run so that it sees everything.
func (w wording) recording() {
	ef, f := w.ef, w.f
	ef.Verdict = "recording: " + kit.TrustText(f.Trust)
	if f.Coverage != "" {
		ef.Verdict += " (trace coverage: " + f.Coverage + ")"
	}
	w.ev("trace entries", "entries")
	w.ev("live blocks it never allocated", "untraced_blocks")
	w.ev("frees of blocks allocated before it", "orphan_frees")
	var args, do []string
	if f.EnableAll {
		args = append(args, `enabled="all"`)
	}
	if f.ContextAll {
		args = append(args, `context="all"`)
	}
	if f.MaxEntries > 0 {
		args = append(args, "max_entries="+strconv.Itoa(f.MaxEntries))
		do = append(do, "the ring buffer wrapped: record with max_entries above the run's event count (at least 10 times the "+
			units.Int(figValue(f, "entries"))+" it kept)")
	}
	if f.StartEarly {
		do = append(do, "call torch.cuda.memory._record_memory_history before the first CUDA allocation")
	}
	if len(args) > 0 {
		do = append(do, "torch.cuda.memory._record_memory_history("+strings.Join(args, ", ")+")")
	}
	ef.Action = strings.Join(do, "; ")
}

// capSourceText says where whatif's cap came from (its limit_source).
func capSourceText(src string) string {
	switch src {
	case "flag":
		return "--limit"
	case "oom-message":
		return "torch's OOM message"
	case "inferred-oom":
		return "inferred from the OOM"
	case "inferred-releases":
		return "inferred from the cache releases"
	}
	return "inferred"
}

func hasFig(f *explain.Finding, name string) bool {
	_, ok := f.Figure(name)
	return ok
}

func stepUnit(f *explain.Finding) string {
	if f.Steps.Source == steps.StepsSlices {
		return "slice"
	}
	return "step"
}

// markerText names the allocation pattern steps were found from.
func markerText(f *ExplainFinding) string {
	if f.MarkerWhere != "" {
		return "at " + f.MarkerWhere
	}
	return "once per step"
}

func stepSourceText(f *ExplainFinding) string {
	switch f.Steps.Source {
	case steps.StepsAnnotation:
		return "the record_function range " + strconv.Quote(f.Steps.Name)
	case steps.StepsPattern:
		if len(f.Where) > 0 {
			return "the allocation made once per step at " + f.Where[0]
		}
		return "an allocation made once per step"
	}
	return f.Steps.Source.String()
}

// WriteExplain writes v as text: per device the findings, most severe
// first, each a verdict line, its evidence, the stacks involved and what
// to do.
func WriteExplain(w io.Writer, v *ExplainView) error {
	ew := &kit.ErrWriter{W: w}
	width := kit.Width(w)
	for k, d := range v.Devices {
		if k > 0 {
			ew.Printf("\n")
		}
		ew.Printf("Device %d: %s\n", d.Device, units.Plural(len(d.Findings), "finding"))
		for i := range d.Findings {
			writeFinding(ew, width, i+1, &d.Findings[i])
		}
	}
	return ew.Err
}

// WriteExplainFindings writes the findings of one device as `state --at
// oom` opens with them, under a heading.
func WriteExplainFindings(w io.Writer, d *ExplainDevice) error {
	ew := &kit.ErrWriter{W: w}
	ew.Printf("Explain (snapview explain):\n")
	for i := range d.Findings {
		writeFinding(ew, kit.Width(w), i+1, &d.Findings[i])
	}
	return ew.Err
}

func writeFinding(ew *kit.ErrWriter, width, n int, f *ExplainFinding) {
	ew.Printf("%s", kit.WrapAt(fmt.Sprintf("%d. [%s] ", n, f.Severity), f.Verdict+".", width))
	if len(f.Evidence) > 0 {
		ew.Printf("%s", kit.WrapAt("   evidence: ", strings.Join(f.Evidence, "; ")+".", width))
	}
	for _, l := range ExplainBlockerLines(f, 3) {
		ew.Printf("%s", kit.WrapAt("   blocker: ", l, width))
	}
	if len(f.Blockers) > 3 {
		ew.Printf("   ... %s more (--json lists them)\n", units.Int(int64(len(f.Blockers)-3)))
	}
	if f.Kind != explain.KindNoLeak {
		for _, wh := range f.Where {
			ew.Printf("%s", kit.WrapAt("   at: ", wh, width))
		}
	}
	if f.Action != "" {
		ew.Printf("%s", kit.WrapAt("   do: ", f.Action+".", width))
	}
}

// ExplainBlockerLines words the first n blockers of f, one line each: how
// many allocations of which sizes, the bytes they strand in how many
// segments, how long they had been held, and where they were allocated.
func ExplainBlockerLines(f *ExplainFinding, n int) []string {
	var out []string
	for k, b := range f.Blockers {
		if k == n {
			break
		}
		sizes := units.Bytes(b.MinSize)
		if b.MaxSize != b.MinSize {
			sizes += " to " + units.Bytes(b.MaxSize)
		}
		held := "older than the trace"
		if b.FirstAlloc >= 0 {
			held = "held " + units.Plural(b.HeldEntries, "entry")
			if b.HeldUS >= 0 {
				held += " (" + units.Micros(b.HeldUS) + ")"
			}
		}
		out = append(out, fmt.Sprintf("%s of %s (%s), stranding %s in %s, %s: %s",
			units.Plural(b.Count, "allocation"), sizes, units.Bytes(b.Bytes), units.Bytes(b.Stranded),
			units.Plural(b.Segments, "segment"), held, f.BlockerWhere[k]))
	}
	return out
}

// The --json schema of `snapview explain`, stable for CI: sizes in bytes,
// times in microseconds, entries index the device's trace.
type explainJSON struct {
	Devices []explainDeviceJSON `json:"devices"`
	// Host is the pinned host memory the text shows after the devices'
	// findings (alone for a file of host memory only).
	Host *hostview.JSON `json:"host,omitempty"`
}

type explainDeviceJSON struct {
	Device   int                  `json:"device"`
	Findings []ExplainFindingJSON `json:"findings"`
}

// ExplainFindingJSON is one finding in the --json of explain and of state
// --at oom.
type ExplainFindingJSON struct {
	Kind     string `json:"kind"`
	Severity string `json:"severity"`
	Verdict  string `json:"verdict"`
	// Figures are the figures that prove it (null: unknown); Exactness
	// says of each "exact", "lower_bound" or "unknown".
	Figures   map[string]*int64 `json:"figures"`
	Exactness map[string]string `json:"exactness"`
	// Stacks are the blockers' stacks (in the order of Blockers), then
	// the finding's other stacks, innermost frame first.
	Stacks   [][]stacks.FrameJSON `json:"stacks"`
	Action   string               `json:"action"`
	Entry    int                  `json:"entry"`
	Pool     *string              `json:"pool"`
	PoolID   *[2]int64            `json:"pool_id"`
	Stream   *uint64              `json:"stream"`
	Setting  *explainSetting      `json:"setting"`
	Mode     string               `json:"mode,omitempty"`
	Blockers []explainBlocker     `json:"blockers"`
}

type explainSetting struct {
	Conf             string `json:"conf"`
	PeakReservedByte int64  `json:"peak_reserved_bytes"`
	Fits             bool   `json:"fits"`
}

type explainBlocker struct {
	Stack           int    `json:"stack"`
	Where           string `json:"where"`
	Count           int    `json:"count"`
	Bytes           int64  `json:"bytes"`
	StrandedBytes   int64  `json:"stranded_bytes"`
	Segments        int    `json:"segments"`
	MinSize         int64  `json:"min_size"`
	MaxSize         int64  `json:"max_size"`
	FirstAllocEntry int    `json:"first_alloc_entry"`
	HeldEntries     int    `json:"held_entries"`
	HeldUS          *int64 `json:"held_us"`
}

// WriteExplainJSON writes v as indented JSON (see explainJSON).
func WriteExplainJSON(w io.Writer, v *ExplainView) error {
	out := explainJSON{Devices: []explainDeviceJSON{}, Host: v.Host}
	for _, d := range v.Devices {
		dj := explainDeviceJSON{Device: d.Device, Findings: []ExplainFindingJSON{}}
		for i := range d.Findings {
			dj.Findings = append(dj.Findings, ExplainFindingOf(v.snap, &d.Findings[i]))
		}
		out.Devices = append(out.Devices, dj)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// ExplainFindingOf is f as ExplainFindingJSON, its stacks written out.
func ExplainFindingOf(s *snapshot.Snapshot, f *ExplainFinding) ExplainFindingJSON {
	fj := ExplainFindingJSON{
		Kind: string(f.Kind), Severity: string(f.Severity), Verdict: f.Verdict, Action: f.Action, Entry: f.Entry,
		Figures: map[string]*int64{}, Exactness: map[string]string{}, Stacks: [][]stacks.FrameJSON{},
		Blockers: []explainBlocker{}, Mode: f.Mode,
	}
	for _, g := range f.Figures {
		fj.Figures[g.Name] = kit.KnownOr(g.Value, g.Exactness)
		fj.Exactness[g.Name] = g.Exactness.String()
	}
	if f.PoolSet {
		p := kit.PoolLabel(f.Large, snapshot.PoolID{}, false)
		id, st := [2]int64(f.Pool), f.Stream
		fj.Pool, fj.PoolID, fj.Stream = &p, &id, &st
	}
	if f.Setting != "" {
		fj.Setting = &explainSetting{Conf: f.Setting, PeakReservedByte: f.SettingPeak, Fits: f.SettingFits}
	}
	for k, b := range f.Blockers {
		bj := explainBlocker{
			Stack: len(fj.Stacks), Where: f.BlockerWhere[k], Count: b.Count, Bytes: b.Bytes, StrandedBytes: b.Stranded,
			Segments: b.Segments, MinSize: b.MinSize, MaxSize: b.MaxSize, FirstAllocEntry: b.FirstAlloc, HeldEntries: b.HeldEntries,
		}
		if b.HeldUS >= 0 {
			us := b.HeldUS
			bj.HeldUS = &us
		}
		fj.Stacks = append(fj.Stacks, stacks.FramesJSON(s, b.Stack))
		fj.Blockers = append(fj.Blockers, bj)
	}
	for _, id := range f.Stacks {
		fj.Stacks = append(fj.Stacks, stacks.FramesJSON(s, id))
	}
	return fj
}
