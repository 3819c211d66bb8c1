package whatif

import (
	"fmt"
	"runtime"
	"slices"
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
	// device's memory); 0 means none was given: it is inferred from an
	// oom entry when the trace has one, else the run is taken as uncapped.
	Limit int64
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

// Bounds are the bounds of a cap inferred from an OOM, bytes.
type Bounds struct {
	// Min is the highest reserved seen: the cap is at least that.
	Min int64
	// Max is the reserved bytes when the request failed plus the segment
	// it needed, minus one: the cap is below that sum.
	Max int64
}

// Row is one simulated setting.
type Row struct {
	// Conf is the PYTORCH_CUDA_ALLOC_CONF value: as recorded for the file's
	// row, as given for a --conf row, canonical for a candidate.
	Conf   string
	Source string
	Config allocator.Config
	Outcome
}

// Fits reports whether no request failed under the row's setting.
func (r *Row) Fits() bool { return r.OOMs == 0 }

// Result is the what-if analysis of one device.
type Result struct {
	Device int
	// Limit is the cap simulated, bytes (0: none). LimitGiven is true when
	// it came from Options.Limit; Inferred holds the bounds an OOM gives
	// (nil without an oom entry, or when a cap was given).
	Limit      int64
	LimitGiven bool
	Inferred   *Bounds
	// SelfCheck compares the file's own row with the file. When it is not
	// exact, every prediction is approximate.
	SelfCheck SelfCheck
	// Rows: the file's own settings first, then the --conf values or the
	// candidates.
	Rows []Row
	// Best indexes the row to recommend: the one that fits with the
	// lowest peak reserved, when it is not the file's own setting and
	// does better than it (fits where the file failed, or reserves less);
	// -1 when none does.
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
// settings own: each changes one setting of own (expandable_segments:True;
// max_split_size_mb 64, 128, 256 and 512; roundup_power2_divisions 4, 8
// and the interval form of torch's documentation; and, under a cap
// (limit > 0), garbage_collection_threshold 0.6 and 0.8, which torch
// applies only under a per-process memory fraction). A candidate equal to
// own is left out.
func Candidates(own allocator.Config, limit int64) []allocator.Config {
	var out []allocator.Config
	add := func(f func(*allocator.Config)) {
		c := own
		f(&c)
		if c != own && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
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
	var confs []allocator.Config
	for _, c := range opts.Confs {
		cfg, err := allocator.Parse(c)
		if err != nil {
			return nil, err
		}
		confs = append(confs, cfg)
	}
	if r == nil {
		var err error
		if r, err = replay.Run(s, device, replay.Options{Mode: replay.StatsOnly}); err != nil {
			return nil, err
		}
	}
	// The settings the replay followed: the file's, and any rule the
	// replay inferred for a producer that is not torch's CUDA allocator.
	own := r.Config()
	res := &Result{Device: device, Best: -1, Seeded: r.Seeded, Trust: r.Stats.Known}

	res.Limit, res.LimitGiven = opts.Limit, opts.Limit > 0
	if b := inferLimit(s.Traces[device], r, own); b != nil && !res.LimitGiven {
		res.Inferred = b
		res.Limit = b.Min
	}
	p := compile(s, r, own, res.Limit)
	res.EmptyCaches = p.emptyCaches - p.capHints
	res.CapReleases = p.capHints
	res.Requests = p.ooms
	for i := range p.ops {
		if p.ops[i].kind == opAlloc {
			res.Requests++
		}
	}

	fileConf := own.String()
	if s.Settings != nil {
		fileConf = s.Settings.Conf
	}
	res.Rows = append(res.Rows, Row{Conf: fileConf, Source: SourceFile, Config: own})
	if len(opts.Confs) > 0 {
		for i, c := range confs {
			res.Rows = append(res.Rows, Row{Conf: opts.Confs[i], Source: SourceConf, Config: c})
		}
	} else {
		for _, c := range Candidates(own, res.Limit) {
			res.Rows = append(res.Rows, Row{Conf: c.String(), Source: SourceCandidate, Config: c})
		}
	}

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
			row := &res.Rows[i]
			if i == 0 {
				chk := newChecker(p)
				sm := newSim(p, row.Config, res.Limit, chk)
				chk.s = sm
				row.Outcome = sm.run()
				res.SelfCheck = chk.finish(row.Outcome)
			} else {
				row.Outcome = newSim(p, row.Config, res.Limit, nil).run()
			}
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, len(res.Rows))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if sc := &res.SelfCheck; !sc.Exact && res.Limit == 0 && p.capHints > 0 {
		sc.Reason += fmt.Sprintf("; the trace frees cached segments right before new ones %d times, as the allocator "+
			"does under a cap: if the run had one (set_per_process_memory_fraction), give it with --limit", p.capHints)
	}
	if res.LimitGiven {
		if at, reserved := overCap(s.Traces[device], r, res.Limit); at >= 0 {
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
	res.Best = best(res.Rows)
	return res, nil
}

// best picks the row to recommend (see Result.Best).
func best(rows []Row) int {
	b := -1
	for i := 1; i < len(rows); i++ {
		r := &rows[i]
		if !r.Fits() || r.Config == rows[0].Config {
			continue
		}
		if b < 0 || r.PeakReserved < rows[b].PeakReserved {
			b = i
		}
	}
	if b >= 0 && rows[0].Fits() && rows[b].PeakReserved >= rows[0].PeakReserved {
		return -1
	}
	return b
}

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

// inferLimit bounds the cap from the first oom entry of trace: the cap is
// at least the highest reserved seen (every segment the run got fit under
// it; with expandable segments, alloc_block checked the request's whole
// get_allocation_size before mapping what was missing) and less than the
// reserved bytes when the request failed plus the segment it needed
// (get_allocation_size of the rounded request, which the entry records).
// nil when the trace has no oom entry or the bounds contradict each other.
func inferLimit(trace []snapshot.TraceEntry, r *replay.Result, own allocator.Config) *Bounds {
	var reserved int64
	for _, sg := range r.InitialState() {
		reserved += sg.TotalSize
	}
	low := reserved
	var oomAt int64 = -1
	var need int64
	mapStart := int64(-1) // reserved before a run of segment_map entries
	for i := range trace {
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionSegmentAlloc:
			reserved += e.Size
			low = max(low, reserved)
		case snapshot.ActionSegmentMap:
			if mapStart < 0 {
				mapStart = reserved
			}
			reserved += e.Size
			low = max(low, reserved)
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			reserved -= e.Size
		case snapshot.ActionAlloc:
			if mapStart >= 0 {
				low = max(low, mapStart+allocator.AllocationSize(own.RoundSize(e.Size)))
				mapStart = -1
			}
		case snapshot.ActionOOM:
			mapStart = -1
			if oomAt < 0 {
				oomAt = reserved
				need = allocator.AllocationSize(e.Size)
			}
		}
	}
	if oomAt < 0 {
		return nil
	}
	b := &Bounds{Min: low, Max: oomAt + need - 1}
	if b.Max < b.Min {
		return nil
	}
	return b
}
