package whatif

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// Row sources.
const (
	SourceFile      = "file"      // the settings the file was recorded under
	SourceConf      = "conf"      // a setting the caller asked for
	SourceCandidate = "candidate" // one of the settings snapview tries
)

// Options says what [Analyze] simulates.
type Options struct {
	// Limit is the cap the process ran under, bytes
	// (set_per_process_memory_fraction x the device's memory, or the
	// device's memory); 0 means none was given: it is taken from
	// OOMMessage, else bounded by the trace's first oom entry, else by the
	// frees of cached segments right before new ones (the allocator making
	// room under a cap), else the run is taken as uncapped.
	Limit int64
	// OOMMessage is torch's OutOfMemoryError message for the run
	// ([ParseOOMMessage]), nil when not given: its "N allowed" (or, with
	// no fraction, its free memory over the reserved bytes at the oom
	// entry) fixes the cap to format_size's precision.
	OOMMessage *OOMMessage
	// Confs are PYTORCH_CUDA_ALLOC_CONF values to simulate; when empty,
	// [Candidates] are.
	Confs []string
	// Parallel is the number of simulations run at once (0: GOMAXPROCS).
	Parallel int
	// Progress, when set, is called after each simulation with the number
	// done and the total, from the goroutine that ran it (calls do not
	// overlap).
	Progress func(done, total int)
}

// Row is one simulated setting.
type Row struct {
	// Conf is the PYTORCH_CUDA_ALLOC_CONF value: as recorded for the file's
	// row, as given for a --conf row, canonical for a candidate.
	Conf   string
	Source string
	Config allocator.Config
	Outcome
	// Cap is how the setting fares over the cap interval (nil when the
	// cap is one value or none); Outcome is the run at its lower bound.
	Cap *CapFit
}

// Fits reports whether no request failed under the row's setting.
func (r *Row) Fits() bool { return r.OOMs == 0 }

// Result is the what-if analysis of one device.
type Result struct {
	Device int
	// Limit is the cap the rows were simulated under, bytes (0: none): the
	// lower bound of Inferred when the file only bounds the cap.
	// LimitGiven is true when it came from Options.Limit. LimitSource says
	// where it came from (LimitNone, LimitFlag, LimitOOMMessage,
	// LimitInferredOOM, LimitInferredReleases). Inferred holds the bounds
	// when the cap is an interval (nil when it is one value or none): each
	// row's Cap then says how it fares over it.
	Limit       int64
	LimitGiven  bool
	LimitSource string
	Inferred    *Bounds
	// Message is Options.OOMMessage; MessageNote says why its cap was not
	// used ("" when it was, or none was given).
	Message     *OOMMessage
	MessageNote string
	// SelfCheck compares the file's own row with the file. When it is not
	// exact, every prediction is approximate.
	SelfCheck SelfCheck
	// Rows: the file's own settings first, then the --conf values or the
	// candidates.
	Rows []Row
	// Best indexes the row to recommend: of the rows that fit (at every
	// cap of the interval, when the cap is an interval), the one with the lowest
	// peak reserved, the simpler on a tie; when none fits and the file's
	// row fails, the one that fits from the lowest cap; only when it is
	// not the file's own setting and does better than it (fits where the
	// file failed, reserves less, or fits from a lower cap); -1 when none
	// does.
	Best int
	// EmptyCaches counts the empty_cache() calls read from the trace: runs
	// of segment_free or segment_unmap entries that are not the allocator
	// making room (CapReleases are not among them).
	EmptyCaches int
	// CapReleases counts the runs of releases right before a new segment
	// in a run simulated with no cap: the allocator making room under a
	// cap the caller did not give, or empty_cache() calls; with no cap to
	// tell them apart they are simulated as empty_cache() calls.
	CapReleases int
	// CapBelowFile is true when the cap given (--limit) is below the
	// reserved bytes the file itself reached: the run cannot have had it.
	// The self-check then names the entry where the file went over it.
	CapBelowFile bool
	// Trust is the trust of the file's history figures, decided once in
	// analyze ([replay.DecideTrust], the replay's Stats.Known): the file
	// row's peaks carry its marks, and an exact self-check or "no setting
	// does better" hold only over what the trace covers when History is
	// not Exact.
	Trust stats.Known
	// Seeded is true when the trace misses the start of the run: the
	// simulation starts from the state the replay reconstructed.
	Seeded bool
	// Requests counts the requests simulated (alloc and oom entries).
	Requests int
	// Uncapped is the file's own settings simulated with no cap, when a
	// cap applies and the file's row fails under it: its PeakReserved is
	// the cap the run would have needed.
	Uncapped *Outcome
}

// Candidates returns the settings snapview tries besides the file's own
// settings own: torch's defaults ("") and own with each of its settings
// removed (so that no change is recommended where a simpler setting does
// as well), then own with one setting changed: expandable_segments:True;
// max_split_size_mb 64, 128, 256 and 512; roundup_power2_divisions 4, 8
// and the interval form of torch's documentation; and, under a cap
// (limit > 0), garbage_collection_threshold 0.6 and 0.8, which torch
// applies only under a per-process memory fraction. A candidate equal to
// own or to an earlier one is left out.
func Candidates(own allocator.Config, limit int64) []allocator.Config {
	var out []allocator.Config
	add := func(f func(*allocator.Config)) {
		c := own
		f(&c)
		if c != own && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	def := allocator.Default()
	add(func(c *allocator.Config) { *c = def })
	add(func(c *allocator.Config) { c.ExpandableSegments = false })
	add(func(c *allocator.Config) { c.MaxSplitSize = def.MaxSplitSize })
	add(func(c *allocator.Config) { c.MaxNonSplitRounding = def.MaxNonSplitRounding })
	add(func(c *allocator.Config) { c.GarbageCollectionThreshold = 0 })
	add(func(c *allocator.Config) { c.Divisions = def.Divisions })
	add(func(c *allocator.Config) { c.ExpandableSegments = true })
	for _, mb := range []int64{64, 128, 256, 512} {
		add(func(c *allocator.Config) { c.MaxSplitSize = mb << 20 })
	}
	for _, conf := range []string{"roundup_power2_divisions:4", "roundup_power2_divisions:8", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"} {
		d, _ := allocator.Parse(conf)
		add(func(c *allocator.Config) { c.Divisions = d.Divisions; c.Rounding = nil })
	}
	if limit > 0 {
		for _, g := range []float64{0.6, 0.8} {
			add(func(c *allocator.Config) { c.GarbageCollectionThreshold = g })
		}
	}
	return out
}

// Analyze simulates device's trace of s under the file's own settings
// (the self-check) and under opts.Confs or the [Candidates], in parallel.
// r is the replay of the device (a Full [replay.Run] or
// a StatsOnly [replay.Run]; nil: Analyze replays it). It returns an error when
// the device has no trace, or a --conf value does not parse (a
// *allocator.ParseError).
func Analyze(s *snapshot.Snapshot, device int, r *replay.Result, opts Options) (*Result, error) {
	if device < 0 || device >= len(s.Traces) || len(s.Traces[device]) == 0 {
		return nil, fmt.Errorf("device %d: no trace entries to simulate (record with torch.cuda.memory._record_memory_history())", device)
	}
	confs, err := parseConfs(opts.Confs)
	if err != nil {
		return nil, err
	}
	if r == nil {
		if r, err = replay.Run(s, device, replay.Options{Mode: replay.StatsOnly}); err != nil {
			return nil, err
		}
	}
	// The settings the replay followed: the file's, and any rule the
	// replay inferred for a producer that is not torch's CUDA allocator.
	own := r.Config()
	res := &Result{Device: device, Best: -1, Seeded: r.Seeded, Trust: r.Stats.Known}
	p := res.setCap(s, r, own, opts)
	res.count(p)
	res.Rows = rows(s, own, res.Limit, opts.Confs, confs)
	res.simulate(p, opts)
	res.checkCap(s, r, p, own)
	res.Best = best(res.Rows)
	return res, nil
}

// parseConfs parses each PYTORCH_CUDA_ALLOC_CONF value of confs; the
// error is the first value's that does not parse.
func parseConfs(confs []string) ([]allocator.Config, error) {
	var out []allocator.Config
	for _, c := range confs {
		cfg, err := allocator.Parse(c)
		if err != nil {
			return nil, err
		}
		out = append(out, cfg)
	}
	return out, nil
}

// setCap decides the cap to simulate under (given, or inferred from the
// trace and the OOM message: see capBounds), narrows an inferred one to
// the caps under which the file's own settings reproduce the file, and
// returns the program compiled under it.
func (res *Result) setCap(s *snapshot.Snapshot, r *replay.Result, own allocator.Config, opts Options) *program {
	res.LimitGiven = opts.Limit > 0
	res.Message = opts.OOMMessage
	var bounds Bounds
	bounds, res.LimitSource, res.MessageNote = capBounds(s.Traces[res.Device], r, own, opts)
	res.Limit = bounds.Min
	if bounds.Max > bounds.Min {
		res.Inferred = &bounds
	}
	p := compile(s, r, own, res.Limit)
	if res.LimitSource != LimitInferredReleases {
		return p
	}
	// The file's own settings must reproduce the file under the cap
	// simulated: with garbage collection, whose threshold is a fraction
	// of the cap, not every cap the frees allow does; the frees may also
	// have been empty_cache() calls after all.
	if nb, ok := fitCapToFile(s, r, own, bounds); ok && nb != bounds {
		res.Limit, res.Inferred = nb.Min, nil
		if nb.Max > nb.Min {
			res.Inferred = &nb
		}
		p = compile(s, r, own, res.Limit)
	} else if !ok {
		res.Limit, res.LimitSource, res.Inferred = 0, LimitNone, nil
		p = compile(s, r, own, 0)
	}
	return p
}

// count sets the counts of the trace that p read: empty_cache() calls,
// releases read as the cap's, and requests (allocs and ooms).
func (res *Result) count(p *program) {
	res.EmptyCaches = p.emptyCaches - p.capHints
	res.CapReleases = p.capHints
	res.Requests = p.ooms
	for i := range p.ops {
		if p.ops[i].kind == opAlloc {
			res.Requests++
		}
	}
}

// rows are the settings to simulate: the file's own first, then the
// caller's confs (parsed as cfgs) or, with none, the [Candidates] for
// the file's settings and the cap limit.
func rows(s *snapshot.Snapshot, own allocator.Config, limit int64, confs []string, cfgs []allocator.Config) []Row {
	fileConf := own.String()
	if s.Settings != nil {
		fileConf = s.Settings.Conf
	}
	out := []Row{{Conf: fileConf, Source: SourceFile, Config: own}}
	if len(confs) > 0 {
		for i, c := range cfgs {
			out = append(out, Row{Conf: confs[i], Source: SourceConf, Config: c})
		}
		return out
	}
	for _, c := range Candidates(own, limit) {
		out = append(out, Row{Conf: c.String(), Source: SourceCandidate, Config: c})
	}
	return out
}

// simulate runs every row's simulation of p, opts.Parallel at a time
// (default GOMAXPROCS), calling opts.Progress after each.
func (res *Result) simulate(p *program, opts Options) {
	par := opts.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	var mu sync.Mutex
	done := 0
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range res.Rows {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res.simulateRow(p, i)
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(res.Rows))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// simulateRow runs row i's simulation of p under the cap, and its cap
// search when the cap is an interval. Row 0 (the file's own settings)
// runs with the checker and sets the self-check.
func (res *Result) simulateRow(p *program, i int) {
	row := &res.Rows[i]
	var sm *sim
	var chk *checker
	if i == 0 {
		chk = newChecker(p)
		sm = newSim(p, row.Config, res.Limit, chk)
		chk.s = sm
	} else {
		sm = newSim(p, row.Config, res.Limit, nil)
	}
	sm.ckptOn = res.Inferred != nil
	row.Outcome = sm.run()
	if chk != nil {
		res.SelfCheck = chk.finish(row.Outcome)
	}
	if b := res.Inferred; b != nil {
		f := searchCap(sm, row.Outcome, b.Min, b.Max, searchBudget(len(p.ops)))
		row.Cap = &f
	}
}

// checkCap weighs the cap against the simulations: a self-check that
// fails with no cap where the trace shows a cap's releases says so, a
// given cap the file itself exceeds replaces the self-check, and under a
// cap the file's own settings do not fit, the run with no cap gives the
// need (Uncapped).
func (res *Result) checkCap(s *snapshot.Snapshot, r *replay.Result, p *program, own allocator.Config) {
	if sc := &res.SelfCheck; !sc.Exact && res.Limit == 0 && p.capHints > 0 {
		sc.Reason += fmt.Sprintf("; the trace frees cached segments right before new ones %d times, as the allocator "+
			"does under a cap: if the run had one (set_per_process_memory_fraction), give it with --limit", p.capHints)
	}
	if res.LimitGiven {
		if at, reserved := overCap(s.Traces[res.Device], r, res.Limit); at >= 0 {
			res.CapBelowFile = true
			res.SelfCheck = SelfCheck{DivergedAt: at, Reason: fmt.Sprintf(
				"the file reserves %d bytes at entry %d, more than the cap of %d bytes (--limit): "+
					"the run cannot have had this cap", reserved, at, res.Limit)}
		}
	}
	if res.Limit > 0 && !res.Rows[0].Fits() {
		o := newSim(p, own, 0, nil).run()
		res.Uncapped = &o
	}
}

// fitCapToFile narrows the bounds b of a cap inferred from releases to
// the caps under which the file's own settings reproduce the file (the
// self-check): it bisects on the side the self-check says the cap was off
// (too low: the simulation frees cached segments the file kept), then
// finds the lowest such cap, to 2 MiB, at most fitCapRuns simulations in
// all. It returns false when none was found.
func fitCapToFile(s *snapshot.Snapshot, r *replay.Result, own allocator.Config, b Bounds) (Bounds, bool) {
	runs := 0
	check := func(limit int64) (bool, int) {
		runs++
		p := compile(s, r, own, limit)
		chk := newChecker(p)
		sm := newSim(p, own, limit, chk)
		chk.s = sm
		sc := chk.finish(sm.run())
		return sc.Exact, chk.capSide
	}
	if ok, _ := check(b.Min); ok {
		return b, true
	}
	if own.GarbageCollectionThreshold == 0 {
		return b, false // the cap check alone: every cap in b gives the same run
	}
	low, high := b.Min, b.Max+1 // low too low, high too high or past the bounds
	found := int64(-1)
	for runs < fitCapRuns && high-low > capStep {
		mid := low + (high-low)/2/capStep*capStep
		if mid <= low {
			mid = low + capStep
		}
		ok, side := check(mid)
		switch {
		case ok:
			found, high = mid, mid
		case side < 0:
			low = mid
		case side > 0:
			high = mid
		default:
			return b, false
		}
		if found >= 0 {
			break
		}
	}
	if found < 0 {
		return b, false
	}
	// The lowest cap that reproduces the file, above low.
	for runs < fitCapRuns && found-low > capStep {
		mid := low + (found-low)/2/capStep*capStep
		if mid <= low {
			mid = low + capStep
		}
		if ok, _ := check(mid); ok {
			found = mid
		} else {
			low = mid
		}
	}
	return Bounds{Min: found, Max: b.Max}, true
}

// fitCapRuns is the most self-check runs fitCapToFile makes.
const fitCapRuns = 24

// searchBudget is the most simulation steps the cap search of one row
// may take beyond the row's own run: two runs' worth, so that the search
// costs at most three times one candidate, but at least minSearchSteps,
// which a short trace searches to 2 MiB in a few milliseconds.
func searchBudget(nops int) int64 { return max(2*int64(nops), minSearchSteps) }

const minSearchSteps = 1 << 20

// best picks the row to recommend (see Result.Best): of the rows that
// fit over the whole cap interval, the one with the lowest peak reserved
// (on a tie, the one naming fewer settings); when none does and the
// file's row fails, the one that fits from the lowest cap. A row is
// recommended only when it does better than the file's own settings.
func best(rows []Row) int {
	class := func(r *Row) int {
		switch c := r.Cap; {
		case c == nil && r.Fits(), c != nil && c.AtMin && c.AtMax:
			return 0
		case c != nil && c.From > 0:
			return 1
		}
		return 2
	}
	nkeys := func(r *Row) int {
		if c := r.Config.String(); c != "" {
			return strings.Count(c, ",") + 1
		}
		return 0
	}
	better := func(a, b *Row) bool {
		ca, cb := class(a), class(b)
		switch {
		case ca != cb:
			return ca < cb
		case ca == 1 && a.Cap.From != b.Cap.From:
			return a.Cap.From < b.Cap.From
		case a.PeakReserved != b.PeakReserved:
			return a.PeakReserved < b.PeakReserved
		}
		return nkeys(a) < nkeys(b)
	}
	b := -1
	for i := 1; i < len(rows); i++ {
		r := &rows[i]
		if class(r) == 2 || r.Config == rows[0].Config {
			continue
		}
		if b < 0 || better(r, &rows[b]) {
			b = i
		}
	}
	if b < 0 {
		return -1
	}
	own, cand := class(&rows[0]), class(&rows[b])
	if cand > own || (cand == own && cand == 0 && rows[b].PeakReserved >= rows[0].PeakReserved) ||
		(cand == own && cand == 1 && rows[b].Cap.From >= rows[0].Cap.From) {
		return -1
	}
	return b
}

// Pick returns the row of rows to recommend by the rule of Result.Best
// (rows[0] is the file's own settings; rows simulated under the same cap
// or cap interval), -1 when none does better than rows[0]: how a caller
// that simulated a setting of its own (explain's max_split_size_mb:20)
// weighs it against the best candidate.
func Pick(rows []Row) int { return best(rows) }

// overCap returns the first trace entry at which the file's reserved
// bytes (the segments reserved before the trace, plus every segment_alloc
// and segment_map, less every segment_free and segment_unmap) exceed
// limit, and the reserved bytes there; -1 when they never do. Seeded
// segments over the cap give entry 0.
func overCap(trace []snapshot.TraceEntry, r *replay.Result, limit int64) (int, int64) {
	var reserved int64
	for _, sg := range r.InitialState() {
		reserved += sg.TotalSize
	}
	if reserved > limit && len(trace) > 0 {
		return 0, reserved
	}
	for i := range trace {
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			reserved += e.Size
			if reserved > limit {
				return i, reserved
			}
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			reserved -= e.Size
		}
	}
	return -1, 0
}
