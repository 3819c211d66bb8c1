// Package forecast predicts a training run's peak memory at another batch
// size or sequence length from snapshots of the same code at other sizes,
// and the largest size that fits under a cap.
//
// The same code at another size makes the same requests in the same
// order, with other sizes. Forecast aligns the files' request sequences
// two by two (by stack and stream, in order, sizes that scale together:
// [align]; then, between matches, by stack alone: [fillGaps]), fits each
// request's size as a function of the parameter over the files that make
// it ([fitSizes]: constant, linear, quadratic, affine, ..., else piecewise
// linear), synthesizes the sequence at the target value from the file
// nearest it (its frees, streams and order; the requests no other file
// makes keep its sizes), and runs it through the what-if engine's
// simulation of the caching allocator ([whatif.Simulate], the one whatif
// runs over a file) under the file's settings or another, and a cap.
//
// Every figure is an estimate: it holds when the code at the target issues
// the requests the files do, sized as the fits say.
package forecast

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// File is one snapshot of the series and the parameter's value in it.
type File struct {
	Name  string
	Value int64
	Snap  *snapshot.Snapshot
	// Replay is the device's replay (a StatsOnly or Full replay.Run, as
	// analysis.File.Replay gives it); nil: it is replayed here.
	Replay *replay.Result
}

// Options says what [Run] forecasts.
type Options struct {
	// Param names the parameter (batch, seq) in the result.
	Param string
	// Device is the CUDA device whose trace is read.
	Device int
	// Conf, when not nil, is the allocator settings to simulate
	// (PYTORCH_CUDA_ALLOC_CONF, ConfText as given); nil: the settings of
	// the file nearest each target.
	Conf     *allocator.Config
	ConfText string
	// Limit is the cap in bytes (0: none).
	Limit int64
	// Targets are the values to forecast.
	Targets []int64
	// Max searches the largest value that fits under Limit (which must
	// then be > 0).
	Max bool
}

// MaxSimulations bounds the simulations of the --max search.
const MaxSimulations = 10

// minMatched is the share of a file's requests that must align with the
// other files' for the files to be taken as the same code.
const minMatched = 0.5

// InputError is a fault of the files given together (one file only, a
// value given twice, files from different code): the command's usage
// error.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// FileInfo is one input file as the result shows it.
type FileInfo struct {
	Name  string
	Value int64
	// Requests and Bytes are the alloc entries of the device's trace and
	// the bytes they asked for (unrounded).
	Requests int
	Bytes    int64
	// Matched and MatchedBytes are those matched in every other file.
	Matched      int
	MatchedBytes int64
	// PeakAllocated and PeakReserved are the file's own peaks (the
	// replay's, as summary gives them), bytes.
	PeakAllocated, PeakReserved int64
	// Conf is the allocator settings the file was recorded under.
	Conf string
}

// Unmatched is a stack whose requests in one file have no match in
// another file.
type Unmatched struct {
	File     string
	Stack    string
	Requests int
	Bytes    int64
}

// Scaling is a stack whose requests scale one way.
type Scaling struct {
	Form  Form
	Stack string
	// Requests and Bytes are at the template file (TemplateValue).
	Requests int
	Bytes    int64
}

// Target is the forecast at one value.
type Target struct {
	Value int64
	// Template is the file whose sequence was resized (the nearest).
	Template string
	// PeakAllocated and PeakReserved are the simulated peaks, bytes (up
	// to the failed request when one fails).
	PeakAllocated, PeakReserved int64
	OOM                         bool
	// OOMEntry is the template's trace entry of the first request that
	// fails (-1: none); OOMSize its forecast size, OOMStack its stack.
	OOMEntry int
	OOMSize  int64
	OOMStack string
	// Extrapolated is true outside the files' values; Far when more than
	// the files' span away from them; Below when below every file (where
	// the code can take paths the files do not show: GPT-2 at batch 1
	// makes none of the backward's reduction buffers batch 2 makes).
	Extrapolated, Far, Below bool
	// Band, when not nil, is the same forecast with the reduction buffers
	// beyond the files sized at the other end of what their rule allows
	// (see [Band]): the target's figures lie between the two.
	Band *Band
}

// Band is the other end of a forecast beyond the files. A reduction split
// across thread blocks allocates a staging buffer that grows with the
// size up to a cap the device sets, and none when the reduction is short
// ([reductionBuffers]); the files cannot tell where the cap lies beyond
// them. Below every file the forecast sizes a buffer the files show at
// one size in proportion to the value (as it grows below the cap), and
// the band keeps the files' size (capped all the way down); above every
// file the forecast follows the fit (still growing), and the band keeps
// the nearest file's size (capped from there).
type Band struct {
	// Buffers is the number of the template's requests sized otherwise;
	// Bytes their sizes at the target in the forecast and BandBytes in
	// the band (sums over the whole sequence).
	Buffers          int
	Bytes, BandBytes int64
	// PeakAllocated and PeakReserved are the band's simulated peaks,
	// bytes; OOM and OOMEntry its verdict under the cap (OOMEntry -1:
	// none fails).
	PeakAllocated, PeakReserved int64
	OOM                         bool
	OOMEntry                    int
}

// AllocatedRange and ReservedRange return the lowest and highest peak of
// the forecast and its band (the forecast's when it has none), bytes.
func (t *Target) AllocatedRange() (lo, hi int64) {
	if t.Band == nil {
		return t.PeakAllocated, t.PeakAllocated
	}
	return min(t.PeakAllocated, t.Band.PeakAllocated), max(t.PeakAllocated, t.Band.PeakAllocated)
}

// ReservedRange: see [Target.AllocatedRange].
func (t *Target) ReservedRange() (lo, hi int64) {
	if t.Band == nil {
		return t.PeakReserved, t.PeakReserved
	}
	return min(t.PeakReserved, t.Band.PeakReserved), max(t.PeakReserved, t.Band.PeakReserved)
}

// Max is the --max answer.
type Max struct {
	// Found is false when not even the smallest value tried fits
	// (Value is then 0), or the search stopped without a boundary.
	Found bool
	// Value fits; Value+1 does not (Next).
	Value int64
	At    *Target
	Next  *Target
	// Simulations is the number run by the search and for the bands of
	// At and Next (see [forecaster.maxBands]).
	Simulations int
	// Estimate is the files' own peak reserved extrapolated linearly to
	// the cap; Start the value the capped search started from, after
	// Refine uncapped simulations moved it (secant steps on the forecast
	// peak reserved).
	Estimate int64
	Start    int64
	Refine   int
}

// LeaveOneOut is one file predicted from the others.
type LeaveOneOut struct {
	File                                string
	Value                               int64
	PeakAllocated, PeakReserved         int64 // predicted
	FilePeakAllocated, FilePeakReserved int64 // the file's own
	AllocatedErrorPct, ReservedErrorPct float64
}

// Result is a forecast.
type Result struct {
	Param  string
	Device int
	// Conf is the settings simulated: ConfText, or the template's.
	Conf  string
	Limit int64
	Files []FileInfo
	// MatchedRequests and MatchedBytes are the shares (0-1) of all
	// files' requests and bytes matched in every other file.
	MatchedRequests, MatchedBytes float64
	// Unmatched lists the stacks with unmatched requests, most bytes
	// first (at most 10).
	Unmatched      []Unmatched
	UnmatchedCount int
	// Scaling lists, for the template of the first target (or of the
	// --max answer), the stacks by form, most bytes first; Forms counts
	// requests by form there.
	Scaling       []Scaling
	Forms         map[Form]int
	FormBytes     map[Form]int64
	TemplateValue int64
	// Rounded counts the matched requests whose form holds only within
	// the allocator's rounding.
	Rounded int
	// Partial and PartialBytes count the template's requests matched in
	// some files but not all: their sizes are fitted over those files.
	Partial      int
	PartialBytes int64
	Targets      []Target
	Max          *Max
	LeaveOneOut  []LeaveOneOut
	// Simulations counts every simulation run.
	Simulations int
	// AlignWork counts the alignment's steps (diagonals visited).
	AlignWork int64
	// Notes are caveats to print (settings that differ between files).
	Notes []string
}

// seq is one file's request sequence.
type seq struct {
	name   string
	value  int64
	events []whatif.Event
	allocs []int32  // index into events of each alloc, in order
	keys   []int32  // interned stack+stream key of each alloc
	labels []string // short stack label of each alloc
	reduce []bool   // each alloc: a reduction's staging buffer (reductionBuffers)
	cfg    allocator.Config
	conf   string
	peakA  int64
	peakR  int64
}

type forecaster struct {
	opts   Options
	seqs   []*seq
	aligns map[[2]int][]int32
	models map[string]*model // by set and template
	work   int64
	sims   int
}

// Run forecasts opts.Targets (and with opts.Max the largest value under
// opts.Limit) from files: [NewSeries], [Series.Add] for each file, then
// [Series.Forecast]. It returns their errors.
func Run(files []File, opts Options) (*Result, error) {
	sr := NewSeries(opts)
	for i := range files {
		if err := sr.Add(&files[i]); err != nil {
			return nil, err
		}
	}
	return sr.Forecast()
}

// Series is a forecast being set up: the request sequences of the files
// read so far. A caller can drop each snapshot once [Series.Add] has read
// it, so that only one is held at a time.
type Series struct {
	f      *forecaster
	intern map[string]int32
	names  []string
}

// NewSeries starts a forecast under opts.
func NewSeries(opts Options) *Series {
	return &Series{f: &forecaster{opts: opts, aligns: map[[2]int][]int32{}, models: map[string]*model{}}, intern: map[string]int32{}}
}

// Add reads the request sequence of opts.Device in file. It returns an
// *InputError when the device has no trace, the trace misses the start
// of the run or holds an oom entry, or another file has the same value,
// and the replay's error for a trace it cannot replay.
func (sr *Series) Add(file *File) error {
	f := sr.f
	sq, err := prepare(file, f.opts.Device, sr.intern)
	if err != nil {
		return err
	}
	for _, o := range f.seqs {
		if o.value == sq.value {
			return &InputError{fmt.Sprintf("%s and %s: both at %s=%d: give each value once", o.name, sq.name, f.opts.Param, sq.value)}
		}
	}
	f.seqs = append(f.seqs, sq)
	sr.names = append(sr.names, file.Name)
	return nil
}

// Forecast forecasts opts.Targets (and with opts.Max the largest value
// under opts.Limit) from the files added. It returns an *InputError for
// files that cannot be forecast from together: fewer than two, or files
// whose requests do not align (less than half of a file's requests match
// another's); and for Max without a Limit.
func (sr *Series) Forecast() (*Result, error) {
	f, opts := sr.f, sr.f.opts
	if len(f.seqs) < 2 {
		return nil, &InputError{fmt.Sprintf("forecast needs snapshots at two values or more of the parameter; got %d (%s)", len(f.seqs), strings.Join(sr.names, ", "))}
	}
	slices.SortStableFunc(f.seqs, func(a, b *seq) int { return cmp.Compare(a.value, b.value) })
	// The caches are by file index: files added since a previous call
	// moved them.
	clear(f.aligns)
	clear(f.models)
	f.sims, f.work = 0, 0
	res := &Result{Param: opts.Param, Device: opts.Device, Limit: opts.Limit, Forms: map[Form]int{}, FormBytes: map[Form]int64{}}
	if err := f.checkAligned(res); err != nil {
		return nil, err
	}
	confs := map[string]bool{}
	for _, s := range f.seqs {
		confs[s.conf] = true
	}
	if len(confs) > 1 && opts.Conf == nil {
		res.Notes = append(res.Notes, "the files were recorded under different allocator settings: each target is simulated under its template's")
	}
	all := make([]int, len(f.seqs))
	for i := range all {
		all[i] = i
	}
	for _, v := range opts.Targets {
		t, md := f.target(all, v, opts.Limit)
		f.band(md, all, &t, opts.Limit, opts.Conf)
		res.Targets = append(res.Targets, t)
	}
	if opts.Max {
		m, err := f.search(all)
		if err != nil {
			return nil, err
		}
		f.maxBands(all, m)
		res.Max = m
	}
	if len(f.seqs) >= 3 {
		for i := range f.seqs {
			rest := slices.Delete(slices.Clone(all), i, i+1)
			s := f.seqs[i]
			t, _ := f.targetConf(rest, s.value, 0, &s.cfg)
			res.LeaveOneOut = append(res.LeaveOneOut, LeaveOneOut{
				File: s.name, Value: s.value,
				PeakAllocated: t.PeakAllocated, PeakReserved: t.PeakReserved,
				FilePeakAllocated: s.peakA, FilePeakReserved: s.peakR,
				AllocatedErrorPct: pct(t.PeakAllocated, s.peakA), ReservedErrorPct: pct(t.PeakReserved, s.peakR),
			})
		}
	}
	// How sizes scale, at the template of the first answer.
	tv := int64(0)
	switch {
	case len(res.Targets) > 0:
		tv = res.Targets[0].Value
	case res.Max != nil && res.Max.Found:
		tv = res.Max.Value
	default:
		tv = f.seqs[len(f.seqs)-1].value
	}
	f.describe(res, all, tv)
	if opts.Conf != nil {
		res.Conf = opts.ConfText
	} else {
		res.Conf = f.seqs[f.nearest(all, tv)].conf
	}
	res.Simulations = f.sims
	res.AlignWork = f.work
	return res, nil
}

func pct(pred, actual int64) float64 {
	if actual == 0 {
		return 0
	}
	return 100 * float64(pred-actual) / float64(actual)
}

// prepare reads a file's request sequence.
func prepare(in *File, device int, intern map[string]int32) (*seq, error) {
	s := in.Snap
	if device < 0 || device >= len(s.Traces) || len(s.Traces[device]) == 0 {
		return nil, &InputError{fmt.Sprintf("%s: device %d has no trace entries: record with torch.cuda.memory._record_memory_history() from the first allocation", in.Name, device)}
	}
	r := in.Replay
	var err error
	if r == nil {
		r, err = replay.Run(s, device, replay.Options{Mode: replay.StatsOnly})
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.Name, err)
	}
	ev, err := whatif.Events(s, r)
	if err != nil {
		return nil, &InputError{fmt.Sprintf("%s: %v", in.Name, err)}
	}
	sq := &seq{name: in.Name, value: in.Value, events: ev, cfg: r.Config(),
		peakA: r.Stats.AllocatedBytes[stats.PoolAll].Peak, peakR: r.Stats.ReservedBytes[stats.PoolAll].Peak}
	sq.conf = sq.cfg.String()
	if s.Settings != nil {
		sq.conf = s.Settings.Conf
	}
	trace := s.Traces[device]
	frames := newFrameCache(s)
	type stackStream struct {
		stack  snapshot.StackID
		stream int
	}
	ids := map[stackStream]int32{}
	streams := map[uint64]int{}
	type stackInfo struct{ key, label string }
	stacks := map[snapshot.StackID]stackInfo{}
	for i := range ev {
		e := &ev[i]
		switch e.Kind {
		case whatif.EventOOM:
			return nil, &InputError{fmt.Sprintf("%s: the run failed a request at entry %d (an oom entry): forecast needs runs that finished", in.Name, e.Entry)}
		case whatif.EventAlloc:
		default:
			continue
		}
		st, ok := streams[e.Stream]
		if !ok {
			st = len(streams)
			streams[e.Stream] = st
		}
		stack := trace[e.Entry].Stack
		si, ok := stacks[stack]
		if !ok {
			si.key, si.label = frames.stack(stack)
			stacks[stack] = si
		}
		ss := stackStream{stack, st}
		id, ok := ids[ss]
		if !ok {
			k := si.key + "\x00" + strconv.Itoa(st)
			if id, ok = intern[k]; !ok {
				id = int32(len(intern))
				intern[k] = id
			}
			ids[ss] = id
		}
		lb := si.label
		sq.allocs = append(sq.allocs, int32(i))
		sq.keys = append(sq.keys, id)
		sq.labels = append(sq.labels, lb)
	}
	if len(sq.allocs) == 0 {
		return nil, &InputError{fmt.Sprintf("%s: device %d: the trace has no alloc entries", in.Name, device)}
	}
	sq.reduce = reductionBuffers(ev, sq.allocs)
	return sq, nil
}

// frameCache classifies and formats a snapshot's frames as the stacks of
// the trace use them (each frame once).
type frameCache struct {
	s    *snapshot.Snapshot
	done []bool
	kind []frames.FrameKind
	text []string
}

func newFrameCache(s *snapshot.Snapshot) *frameCache {
	n := len(s.Frames)
	return &frameCache{s: s, done: make([]bool, n), kind: make([]frames.FrameKind, n), text: make([]string, n)}
}

func (c *frameCache) frame(f snapshot.FrameID) (frames.FrameKind, string) {
	if !c.done[f] {
		fr := c.s.Frames[f]
		c.kind[f], c.text[f], c.done[f] = frames.ClassifyFrame(fr), frames.FrameText(fr), true
	}
	return c.kind[f], c.text[f]
}

// stack returns the key of a stack, the rule leaks and diff group stacks
// by across files (frames.StackKeys unfolded: the text of every frame
// but the unwinder's and the interpreter's, innermost first, a line each),
// and its label: its innermost user frame (a Python frame outside torch
// and the standard library, frames.ClassifyFrame), else its first key
// frame, the file's base name ("modeling_gpt2.py:231 forward"), else
// "<no stack recorded>".
func (c *frameCache) stack(id snapshot.StackID) (key, label string) {
	var b strings.Builder
	first, user := "", ""
	for _, f := range c.s.Stack(id) {
		k, t := c.frame(f)
		if k == frames.FrameNoise {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		} else {
			first = t
		}
		b.WriteString(t)
		if k == frames.FrameUser && user == "" {
			user = t
		}
	}
	switch {
	case user != "":
		label = shortFrame(user)
	case first != "":
		label = shortFrame(first)
	default:
		label = "<no stack recorded>"
	}
	return b.String(), label
}

// shortFrame shortens "filename:line name" to the file's base name.
func shortFrame(text string) string {
	if i := strings.IndexByte(text, ' '); i > 0 {
		if j := strings.LastIndexByte(text[:i], ':'); j > 0 {
			return filepath.Base(text[:j]) + text[j:]
		}
	}
	return text
}

func (f *forecaster) size(s *seq, k int) int64 { return s.events[s.allocs[k]].Size }

// alignment returns, for each alloc of file i, its match in file j (-1).
func (f *forecaster) alignment(i, j int) []int32 {
	if m, ok := f.aligns[[2]int{i, j}]; ok {
		return m
	}
	a, b := f.seqs[i], f.seqs[j]
	ta, tb := f.tokens(a, b)
	m := align(ta, tb, &f.work)
	fillGaps(m, ta, tb, &f.work)
	f.aligns[[2]int{i, j}] = m
	back := make([]int32, len(f.seqs[j].keys))
	for k := range back {
		back[k] = -1
	}
	for k, x := range m {
		if x >= 0 {
			back[x] = int32(k)
		}
	}
	f.aligns[[2]int{j, i}] = back
	return m
}

// fillGaps matches, between two consecutive matches of m, the requests of
// the same stack and stream whose sizes do not scale together (by a
// longest common subsequence of their keys alone): a request whose size
// is affine in the parameter (a*v + c) or irregular is still the same
// request when it sits between the same neighbours.
func fillGaps(m []int32, ta []token3, tb []token, work *int64) {
	i0, j0 := 0, 0 // the gap starts
	for i := 0; i <= len(m); i++ {
		if i < len(m) && m[i] < 0 {
			continue
		}
		j1 := len(tb)
		if i < len(m) {
			j1 = int(m[i])
		}
		if i > i0 && j1 > j0 {
			ga := make([]token3, i-i0)
			for k := range ga {
				ga[k] = token3{key: ta[i0+k].key}
			}
			gb := make([]token, j1-j0)
			for k := range gb {
				gb[k] = token{key: tb[j0+k].key}
			}
			for k, x := range align(ga, gb, work) {
				if x >= 0 {
					m[i0+k] = int32(j0) + x
				}
			}
		}
		i0, j0 = i+1, j1+1
	}
}

// tokens returns the requests of a and b as the alignment compares them:
// alloc x of a can be alloc y of b when they have the same stack and
// stream, and sizes that scale together from a's value to b's: equal, in
// the ratio of the values (linear) or of their squares (quadratic), within
// the allocator's rounding of b's size (allocator.Config.RoundSize under
// b's settings; equal bytes round the same).
func (f *forecaster) tokens(a, b *seq) ([]token3, []token) {
	tb := make([]token, len(b.allocs))
	for y := range tb {
		tb[y] = token{key: b.keys[y], size: b.cfg.RoundSize(f.size(b, y))}
	}
	r := float64(b.value) / float64(a.value)
	ta := make([]token3, len(a.allocs))
	for x := range ta {
		ta[x].key = a.keys[x]
		sa := float64(f.size(a, x))
		for i, k := range [...]float64{1, r, r * r} {
			ta[x].size[i] = -1
			if p := int64(math.Round(sa * k)); p > 0 && p < 1<<50 {
				ta[x].size[i] = b.cfg.RoundSize(p)
			}
		}
	}
	return ta, tb
}

// matched reports, for each alloc of template t, whether it has a match
// in every file of set.
func (f *forecaster) matched(t int, set []int) []bool {
	out := make([]bool, len(f.seqs[t].keys))
	for k := range out {
		out[k] = true
	}
	for _, j := range set {
		if j == t {
			continue
		}
		m := f.alignment(t, j)
		for k, x := range m {
			if x < 0 {
				out[k] = false
			}
		}
	}
	return out
}

// checkAligned fills the match figures and fails when a file's requests
// mostly do not align with another's.
func (f *forecaster) checkAligned(res *Result) error {
	all := make([]int, len(f.seqs))
	for i := range all {
		all[i] = i
	}
	var nreq, nmatch int
	var nbytes, mbytes int64
	unm := map[[2]string]*Unmatched{}
	for i, s := range f.seqs {
		for j := range f.seqs {
			if j == i {
				continue
			}
			m := f.alignment(i, j)
			n := 0
			for _, x := range m {
				if x >= 0 {
					n++
				}
			}
			if share := float64(n) / float64(len(m)); share < minMatched {
				return &InputError{f.alignFault(i, j, m, share)}
			}
		}
		ok := f.matched(i, all)
		fi := FileInfo{Name: s.name, Value: s.value, Requests: len(s.allocs), PeakAllocated: s.peakA, PeakReserved: s.peakR, Conf: s.conf}
		for k := range ok {
			sz := f.size(s, k)
			fi.Bytes += sz
			if ok[k] {
				fi.Matched++
				fi.MatchedBytes += sz
				continue
			}
			key := [2]string{s.name, s.labels[k]}
			u := unm[key]
			if u == nil {
				u = &Unmatched{File: s.name, Stack: s.labels[k]}
				unm[key] = u
			}
			u.Requests++
			u.Bytes += sz
			res.UnmatchedCount++
		}
		nreq += fi.Requests
		nmatch += fi.Matched
		nbytes += fi.Bytes
		mbytes += fi.MatchedBytes
		res.Files = append(res.Files, fi)
	}
	res.MatchedRequests = float64(nmatch) / float64(max(1, nreq))
	res.MatchedBytes = float64(mbytes) / float64(max(1, nbytes))
	for _, u := range unm {
		res.Unmatched = append(res.Unmatched, *u)
	}
	slices.SortFunc(res.Unmatched, func(a, b Unmatched) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.File, b.File), cmp.Compare(a.Stack, b.Stack))
	})
	if len(res.Unmatched) > 10 {
		res.Unmatched = res.Unmatched[:10]
	}
	return nil
}

// alignFault says what did not align between files i and j.
func (f *forecaster) alignFault(i, j int, m []int32, share float64) string {
	a, b := f.seqs[i], f.seqs[j]
	first := -1
	for k, x := range m {
		if x < 0 {
			first = k
			break
		}
	}
	msg := fmt.Sprintf("%s and %s do not align: %.1f%% of the %d requests of %s match %s's %d in order (at least %.0f%% needed)",
		a.name, b.name, 100*share, len(m), a.name, b.name, len(b.keys), 100*minMatched)
	if first >= 0 {
		msg += fmt.Sprintf("; the first unmatched is %s's request %d from %s", a.name, first, a.labels[first])
	}
	return msg + ": are they from the same code at other sizes?"
}

// nearest returns the file of set whose value is nearest v (the larger on
// a tie).
func (f *forecaster) nearest(set []int, v int64) int {
	best := set[0]
	for _, i := range set[1:] {
		d, bd := absDiff(f.seqs[i].value, v), absDiff(f.seqs[best].value, v)
		if d < bd || (d == bd && f.seqs[i].value > f.seqs[best].value) {
			best = i
		}
	}
	return best
}

func absDiff(a, b int64) int64 {
	if a > b {
		return a - b
	}
	return b - a
}

// model is the fits of one template's requests over a set of files.
type model struct {
	t    int
	fits []Fit // per alloc of the template
	// fitted is false for a request no other file makes: it keeps the
	// template's size.
	fitted []bool
	ok     []bool
	// partial marks the requests matched in some files of the set but
	// not all: their fits are over those files.
	partial []bool
}

func (f *forecaster) model(set []int, t int) *model {
	id := fmt.Sprint(set, t)
	if md, ok := f.models[id]; ok {
		return md
	}
	tm := f.seqs[t]
	ok := f.matched(t, set)
	md := &model{t: t, fits: make([]Fit, len(tm.allocs)), ok: ok}
	md.partial = make([]bool, len(tm.allocs))
	md.fitted = make([]bool, len(tm.allocs))
	vs := make([]float64, 0, len(set))
	sizes := make([]int64, 0, len(set))
	for k := range tm.allocs {
		// The files that make this request: all of set when ok[k], else
		// those it aligns with; from two, its size is fitted over them.
		vs, sizes = vs[:0], sizes[:0]
		for _, j := range set {
			x := k
			if j != t {
				if x = int(f.alignment(t, j)[k]); x < 0 {
					continue
				}
			}
			vs = append(vs, float64(f.seqs[j].value))
			sizes = append(sizes, f.size(f.seqs[j], x))
		}
		if len(vs) < 2 {
			continue
		}
		md.fitted[k] = true
		md.partial[k] = !ok[k]
		md.fits[k] = fitSizes(vs, sizes, tm.cfg.RoundSize, tm.reduce[k])
	}
	f.models[id] = md
	return md
}

// synthesize returns the template's events with each fitted request
// resized to its size at v. Beyond the values of set, a reduction's
// staging buffer ([reductionBuffers]) fitted over the files is sized by
// its rule's growing end: below every file, no more than the template's
// size in proportion to v (a buffer the files show constant has reached
// its cap there; below, the cap need not bind); above every file, as the
// fit says.
func (f *forecaster) synthesize(md *model, set []int, v int64) []whatif.Event {
	tm := f.seqs[md.t]
	ev := slices.Clone(tm.events)
	lo := f.seqs[set[0]].value
	for k, i := range tm.allocs {
		if !md.fitted[k] {
			continue
		}
		sz := md.fits[k].At(float64(v))
		if v < lo && tm.reduce[k] {
			sz = min(sz, proportional(f.size(tm, k), v, tm.value))
		}
		ev[i].Size = sz
	}
	return ev
}

// proportional returns size scaled from value from to value to, at least
// 1 byte.
func proportional(size, to, from int64) int64 {
	return max(1, int64(math.Round(float64(size)*float64(to)/float64(from))))
}

// band fills t.Band when the target lies beyond the values of set and the
// template's reduction buffers take other sizes at the other end of their
// rule ([Band]): below every file, the fit's (capped at the files' size);
// above every file, the template's own (capped from the nearest file),
// and for a buffer no other file makes (kept at the template's size in
// the forecast), the template's in proportion to the value (growing). One
// more simulation.
func (f *forecaster) band(md *model, set []int, t *Target, limit int64, conf *allocator.Config) {
	tm := f.seqs[md.t]
	v := t.Value
	lo, hi := f.seqs[set[0]].value, f.seqs[set[len(set)-1]].value
	if v >= lo && v <= hi {
		return
	}
	ev := f.synthesize(md, set, v)
	b := &Band{}
	for k, i := range tm.allocs {
		if !tm.reduce[k] || (!md.fitted[k] && v < hi) {
			continue
		}
		var sz int64
		switch {
		case !md.fitted[k]:
			// Only the template makes it: the reduction was split from
			// its size on, and grows with the value above it.
			sz = proportional(f.size(tm, k), v, tm.value)
		case v > hi:
			sz = min(md.fits[k].At(float64(v)), f.size(tm, k))
		default:
			sz = md.fits[k].At(float64(v))
		}
		if tm.cfg.RoundSize(sz) == tm.cfg.RoundSize(ev[i].Size) {
			continue
		}
		b.Buffers++
		b.Bytes += ev[i].Size
		b.BandBytes += sz
		ev[i].Size = sz
	}
	if b.Buffers == 0 {
		return
	}
	alt := f.run(md, set, v, limit, conf, ev)
	b.PeakAllocated, b.PeakReserved, b.OOM, b.OOMEntry = alt.PeakAllocated, alt.PeakReserved, alt.OOM, alt.OOMEntry
	t.Band = b
}

// target forecasts v from set under the options' settings.
func (f *forecaster) target(set []int, v, limit int64) (Target, *model) {
	return f.targetConf(set, v, limit, f.opts.Conf)
}

func (f *forecaster) targetConf(set []int, v, limit int64, conf *allocator.Config) (Target, *model) {
	t := f.nearest(set, v)
	md := f.model(set, t)
	return f.simulate(md, set, v, limit, conf), md
}

func (f *forecaster) simulate(md *model, set []int, v, limit int64, conf *allocator.Config) Target {
	return f.run(md, set, v, limit, conf, f.synthesize(md, set, v))
}

// run simulates ev, a sequence synthesized from md's template at v.
func (f *forecaster) run(md *model, set []int, v, limit int64, conf *allocator.Config, ev []whatif.Event) Target {
	tm := f.seqs[md.t]
	cfg := tm.cfg
	if conf != nil {
		cfg = *conf
	}
	out, err := whatif.Simulate(ev, cfg, limit)
	f.sims++
	lo, hi := f.seqs[set[0]].value, f.seqs[set[len(set)-1]].value
	tg := Target{Value: v, Template: tm.name, PeakAllocated: out.PeakAllocated, PeakReserved: out.PeakReserved, OOMEntry: -1}
	if err != nil {
		// Events built here are well formed; an error is a bug.
		panic(err)
	}
	if out.OOMs > 0 {
		tg.OOM = true
		tg.OOMEntry = out.FirstOOM
		for k, i := range tm.allocs {
			if int(tm.events[i].Entry) == out.FirstOOM {
				tg.OOMSize = ev[i].Size
				tg.OOMStack = tm.labels[k]
				break
			}
		}
	}
	span := hi - lo
	tg.Extrapolated = v < lo || v > hi
	tg.Far = v < lo-span || v > hi+span
	tg.Below = v < lo
	return tg
}

// describe fills the scaling summary for the template nearest v.
func (f *forecaster) describe(res *Result, set []int, v int64) {
	t := f.nearest(set, v)
	md := f.model(set, t)
	tm := f.seqs[t]
	res.TemplateValue = tm.value
	by := map[string]*Scaling{}
	for k := range tm.allocs {
		if md.partial[k] {
			res.Partial++
			res.PartialBytes += f.size(tm, k)
		}
		if !md.ok[k] {
			continue
		}
		fit := &md.fits[k]
		sz := f.size(tm, k)
		res.Forms[fit.Form]++
		res.FormBytes[fit.Form] += sz
		if fit.Rounded {
			res.Rounded++
		}
		key := fit.Form.String() + "\x00" + tm.labels[k]
		sc := by[key]
		if sc == nil {
			sc = &Scaling{Form: fit.Form, Stack: tm.labels[k]}
			by[key] = sc
		}
		sc.Requests++
		sc.Bytes += sz
	}
	for _, sc := range by {
		res.Scaling = append(res.Scaling, *sc)
	}
	slices.SortFunc(res.Scaling, func(a, b Scaling) int {
		return cmp.Or(cmp.Compare(a.Form, b.Form), cmp.Compare(b.Bytes, a.Bytes), cmp.Compare(a.Stack, b.Stack))
	})
}

// search finds the largest value that fits under the limit, in at most
// MaxSimulations simulations. It starts from the files' own peak reserved
// extrapolated linearly to the limit, and refines that start at most
// twice by a secant step on the forecast's peak reserved with no cap; a
// value whose uncapped peak reserved is within the limit fits under it (a
// capped run does what the uncapped one does until a segment would pass
// the cap). Then, under the cap, it brackets the boundary (from the start,
// strides of 1, 2, 4, ... up or down) and bisects it.
func (f *forecaster) search(all []int) (*Max, error) {
	limit := f.opts.Limit
	if limit <= 0 {
		return nil, &InputError{"--max needs --limit: the cap to fit under"}
	}
	m := &Max{}
	est := f.estimate(limit)
	m.Estimate = est
	lo, hi := int64(0), int64(-1) // lo fits (0: none known), hi fails (-1: none known)
	tried := map[int64]Target{}
	n := len(f.seqs)
	pv, pp := f.seqs[n-1].value, f.seqs[n-1].peakR
	for range 2 {
		if est <= pv {
			break
		}
		t, _ := f.target(all, est, 0)
		m.Simulations++
		m.Refine++
		if t.PeakReserved <= limit && est > lo {
			lo = est
		}
		if t.PeakReserved <= pp {
			break
		}
		next := est + int64(math.Floor(float64(limit-t.PeakReserved)*float64(est-pv)/float64(t.PeakReserved-pp)))
		next = min(max(next, 1), 1<<40)
		pv, pp, est = est, t.PeakReserved, next
		if absDiff(next, pv) <= 1 {
			break
		}
	}
	m.Start = est
	fits := func(v int64) bool {
		if t, ok := tried[v]; ok {
			return !t.OOM
		}
		t, _ := f.target(all, v, limit)
		m.Simulations++
		tried[v] = t
		return !t.OOM
	}
	switch {
	case est <= lo:
		// The start fits: look above the known fit.
	case fits(est):
		lo = est
	default:
		hi = est
	}
	if hi < 0 {
		for step := int64(1); m.Simulations < MaxSimulations-1; step *= 2 {
			w := lo + step
			if fits(w) {
				lo = w
			} else {
				hi = w
				break
			}
		}
	} else if lo == 0 {
		for step := int64(1); m.Simulations < MaxSimulations-1; step *= 2 {
			w := max(1, hi-step)
			if fits(w) {
				lo = w
				break
			}
			hi = w
			if w == 1 {
				break
			}
		}
	}
	for hi > lo+1 && lo > 0 && m.Simulations < MaxSimulations-1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if lo > 0 {
		t, ok := tried[lo]
		if !ok { // known to fit from its uncapped run: simulate it capped for its peaks
			t, _ = f.target(all, lo, limit)
			m.Simulations++
			tried[lo] = t
		}
		m.Value, m.At = lo, &t
	}
	if hi > 0 {
		t := tried[hi]
		m.Next = &t
	}
	m.Found = lo > 0 && hi == lo+1
	return m, nil
}

// maxBands fills the bands of the --max answer and of the value after it
// (one simulation each, counted in m.Simulations) while the search left
// room under MaxSimulations: the answer's verdict can hold at one end
// only.
func (f *forecaster) maxBands(all []int, m *Max) {
	for _, t := range []*Target{m.At, m.Next} {
		if t == nil || m.Simulations >= MaxSimulations {
			continue
		}
		before := f.sims
		f.band(f.model(all, f.nearest(all, t.Value)), all, t, f.opts.Limit, f.opts.Conf)
		m.Simulations += f.sims - before
	}
}

// estimate extrapolates the files' peak reserved (a line through the two
// largest values) to the limit: the first value the search tries.
func (f *forecaster) estimate(limit int64) int64 {
	n := len(f.seqs)
	a, b := f.seqs[n-2], f.seqs[n-1]
	slope := float64(b.peakR-a.peakR) / float64(b.value-a.value)
	if slope <= 0 {
		return b.value
	}
	v := float64(b.value) + float64(limit-b.peakR)/slope
	if math.IsNaN(v) || v < 1 {
		return 1
	}
	if v > 1<<40 {
		return 1 << 40
	}
	return int64(v)
}
