// Package check decides memory gates for CI: each rule compares one
// torch.cuda.memory_stats() figure of a run (a snapshot's figures, or a
// memory_stats() dump) with a limit, or with the same figure of a baseline
// run, and says whether it holds.
//
// A figure that is only a lower bound, or unknown, is an interval of what
// the true value may be ([v, +inf) or everything); a rule passes when it
// holds over the whole interval, fails when it fails over the whole
// interval, and is unknown otherwise: a verdict never rests on one end of
// what the file allows. Figures that depend on the allocator's history
// (reserved bytes, segments, inactive splits: how the caching allocator
// placed and cached the same requests) are marked, since the same program
// may reserve a different amount run to run (sglang moved its CI gate from
// reserved to allocated memory for that reason).
package check

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// Kind is what a rule checks.
type Kind int

const (
	// Max: a figure at most Limit (bytes or a count), or at most Percent
	// of the baseline's figure when IsPercent.
	Max Kind = iota
	// MaxGrowth: a figure at most Percent above the baseline's.
	MaxGrowth
	// NoOOM: num_ooms is 0.
	NoOOM
	// NoRetries: num_alloc_retries is 0.
	NoRetries
	// NoLeak: no allocation stack is judged a leak (see [Input.Leaks]).
	NoLeak
)

// Rule is one check as the command line gives it.
type Rule struct {
	Kind Kind
	// Name is the figure as the user named it (an alias such as
	// "reserved_peak", or a memory_stats() key); Key is its
	// memory_stats() key. Empty for NoLeak.
	Name, Key string
	// Limit is the bound of a Max rule in the figure's unit (bytes, or a
	// count for num_* figures), unless IsPercent.
	Limit int64
	// Percent is a Max rule's bound as a percentage of the baseline's
	// figure (IsPercent), or a MaxGrowth rule's allowed growth.
	Percent   float64
	IsPercent bool
}

// Aliases are the short names of the figures people gate on most, and the
// memory_stats() keys they stand for.
var aliases = map[string]string{
	"allocated_peak": "allocated_bytes.all.peak",
	"reserved_peak":  "reserved_bytes.all.peak",
	"active_peak":    "active_bytes.all.peak",
	"requested_peak": "requested_bytes.all.peak",
	"allocated":      "allocated_bytes.all.current",
	"reserved":       "reserved_bytes.all.current",
	"retries":        "num_alloc_retries",
	"ooms":           "num_ooms",
}

// AliasNames returns the aliases [ResolveName] accepts, sorted.
func AliasNames() []string {
	names := make([]string, 0, len(aliases))
	for k := range aliases {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// ResolveName returns the memory_stats() key a figure name stands for: an
// alias (see [AliasNames]) or a key itself. The error says what is
// accepted.
func ResolveName(name string) (string, error) {
	if k, ok := aliases[name]; ok {
		return k, nil
	}
	if stats.IsStatsKey(name) {
		return name, nil
	}
	return "", fmt.Errorf("%q is not a memory_stats() key nor one of %s", name, strings.Join(AliasNames(), ", "))
}

// IsCount reports whether the figure under key counts things (num_*,
// allocation.*, segment.*, active.*, inactive_split.*, oversize_*) rather
// than bytes.
func IsCount(key string) bool {
	return !strings.Contains(key, "_bytes.")
}

// DependsOnAllocator reports whether the figure under key depends on how
// the caching allocator placed and cached the requests (its history and
// its settings), not only on the requests: reserved bytes, segments,
// inactive splits, cudaMalloc/cudaFree calls and retries, oversize
// segments. allocated, active and requested bytes and allocation counts
// follow from the requests alone (and the block rounding).
func DependsOnAllocator(key string) bool {
	for _, p := range []string{"reserved_bytes.", "segment.", "inactive_split", "num_device_", "num_alloc_retries", "oversize_segments.", "num_sync_all_streams"} {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Figures are one device's memory_stats() figures by key.
type Figures map[string]stats.Figure

// FiguresOf returns st's figures by key.
func FiguresOf(st *stats.MemoryStats) Figures {
	f := Figures{}
	for _, fig := range st.Figures() {
		f[fig.Key] = fig
	}
	return f
}

// Leak is one allocation stack judged to leak, as [Input.Leaks] lists
// them.
type Leak struct {
	// Where names the stack (its first user frame); Verdict is the leaks
	// view's one-line verdict; Bytes its live bytes at the moment judged.
	Where, Verdict string
	Bytes          int64
}

// Input is one device of a run.
type Input struct {
	Device  int
	Figures Figures
	// Leaks lists the stacks judged to leak; LeaksKnown says whether the
	// file could be judged at all (a trace with steps or growth to judge);
	// LeaksWhy says why not when it could not.
	Leaks      []Leak
	LeaksKnown bool
	LeaksWhy   string
}

// Verdict is a rule's outcome.
type Verdict int

const (
	Pass Verdict = iota
	Fail
	// Unknown: the figure is a lower bound or unknown, and the rule
	// holds at one end of what the file allows but not at the other.
	Unknown
)

// String names the verdict as the text and JSON views print it.
func (v Verdict) String() string {
	switch v {
	case Pass:
		return "pass"
	case Fail:
		return "fail"
	}
	return "unknown"
}

// Result is one rule's outcome on one device.
type Result struct {
	Rule   Rule
	Device int
	// Value is the figure (bytes or a count) and Exactness how far it is
	// trusted; Base and BaseExactness the baseline's (HasBase).
	Value         int64
	Exactness     stats.Exactness
	Base          int64
	BaseExactness stats.Exactness
	HasBase       bool
	// Max and BaseMax, when above Value and Base, are the most a lower
	// bound can be where the file bounds it from above too
	// (num_alloc_retries: stats.MemoryStats.RetriesRange); 0 otherwise.
	Max, BaseMax int64
	// Bound is the limit the value was held to, in the figure's unit
	// (for MaxGrowth and percentage rules, the baseline's figure times
	// the allowed share, when the baseline is exact).
	Bound   int64
	Verdict Verdict
	// Why says what decided the verdict where the figures alone do not
	// ("lower bound: the trace started late", the leaks found).
	Why string
	// Allocator is true when the figure depends on the allocator's
	// history (see [DependsOnAllocator]).
	Allocator bool
	// Cause, against a baseline for a figure that depends on the
	// allocator, says whether the difference comes from the requests or
	// from the allocator's placement; AllocatedDelta is then the change
	// of allocated_bytes.all.peak (bytes) when both are exact.
	Cause          Cause
	AllocatedDelta int64
}

// interval is what a figure's true value may be: [lo, hi].
type interval struct{ lo, hi float64 }

func span(v int64, e stats.Exactness) interval {
	switch e {
	case stats.Exact:
		return interval{float64(v), float64(v)}
	case stats.LowerBound:
		return interval{float64(v), math.Inf(1)}
	}
	return interval{math.Inf(-1), math.Inf(1)}
}

// atMost decides value <= bound over both intervals: pass when every
// value is at most every bound, fail when every value is above every
// bound.
func atMost(value, bound interval) Verdict {
	switch {
	case value.hi <= bound.lo:
		return Pass
	case value.lo > bound.hi:
		return Fail
	}
	return Unknown
}

// Baseline is the figures of the baseline run's device and what tells
// whether the requests differ (see [Run]).
type Baseline struct {
	Figures Figures
	// SameRequests is true when both runs made the same allocations
	// (every stack the same count and requested bytes, as diff judges),
	// false when they differ, and unset (Known false) when that cannot be
	// told (a memory_stats() dump has no trace).
	SameRequests, Known bool
}

// Run applies rules to in (and base where a rule needs the baseline;
// nil without one). The error names a rule that needs a baseline when
// base is nil, or a figure in.Figures lacks.
func Run(rules []Rule, in Input, base *Baseline) ([]Result, error) {
	var out []Result
	for _, r := range rules {
		res := Result{Rule: r, Device: in.Device}
		switch r.Kind {
		case NoLeak:
			res.Exactness = stats.Exact
			res.Value = int64(len(in.Leaks))
			switch {
			case !in.LeaksKnown:
				res.Verdict, res.Exactness, res.Why = Unknown, stats.Unknown, in.LeaksWhy
			case len(in.Leaks) > 0:
				res.Verdict = Fail
				var w []string
				for _, l := range in.Leaks {
					if !slices.Contains(w, l.Where) {
						w = append(w, l.Where)
					}
				}
				res.Why = "leaking: " + strings.Join(w, "; ")
			}
			out = append(out, res)
			continue
		case NoOOM:
			r.Key, r.Name = "num_ooms", "ooms"
		case NoRetries:
			r.Key, r.Name = "num_alloc_retries", "retries"
		}
		res.Rule = r
		fig, ok := in.Figures[r.Key]
		if !ok {
			return nil, fmt.Errorf("device %d has no figure %s", in.Device, r.Key)
		}
		res.Value, res.Exactness = fig.Value, fig.Exactness
		res.Allocator = DependsOnAllocator(r.Key)
		value := figureSpan(fig)
		res.Max = figureMax(fig)
		var bound interval
		switch {
		case r.Kind == NoOOM || r.Kind == NoRetries:
			bound = interval{0, 0}
		case r.Kind == Max && !r.IsPercent:
			bound = interval{float64(r.Limit), float64(r.Limit)}
			res.Bound = r.Limit
		default:
			if base == nil {
				return nil, fmt.Errorf("%s: a limit relative to the baseline needs --baseline", r.Name)
			}
			bf, ok := base.Figures[r.Key]
			if !ok {
				return nil, fmt.Errorf("the baseline's device %d has no figure %s", in.Device, r.Key)
			}
			res.Base, res.BaseExactness, res.HasBase = bf.Value, bf.Exactness, true
			share := r.Percent / 100
			if r.Kind == MaxGrowth {
				share = 1 + r.Percent/100
			}
			b := figureSpan(bf)
			res.BaseMax = figureMax(bf)
			bound = interval{b.lo * share, b.hi * share}
			if bf.Exactness == stats.Exact {
				res.Bound = int64(math.Floor(b.lo * share))
			}
			cause(&res, in.Figures, base)
		}
		res.Verdict = atMost(value, bound)
		if res.Verdict == Unknown {
			res.Why = unknownWhy(r.Key, fig.Exactness, res.BaseExactness, res.HasBase)
		}
		out = append(out, res)
	}
	return out, nil
}

// figureSpan is what f's true value may be: span, narrowed from above by
// f.Max where the file bounds a lower bound from both sides
// (num_alloc_retries: stats.MemoryStats.RetriesRange).
func figureSpan(f stats.Figure) interval {
	v := span(f.Value, f.Exactness)
	if hi := figureMax(f); hi > 0 {
		v.hi = float64(hi)
	}
	return v
}

// figureMax is f.Max where it bounds a lower bound from above, else 0.
func figureMax(f stats.Figure) int64 {
	if f.Exactness == stats.LowerBound && f.Max > f.Value {
		return f.Max
	}
	return 0
}

// unknownWhy says which figure left a verdict open.
func unknownWhy(key string, e, be stats.Exactness, hasBase bool) string {
	switch {
	case key == "num_alloc_retries" && e == stats.LowerBound:
		return "a cudaMalloc retry that succeeds leaves no trace entry of its own: a snapshot bounds the retries by its OOMs, and by those plus each segment_alloc right after a release when its trace covers the run (log memory_stats() to know)"
	case e == stats.Unknown:
		return "the file cannot tell this figure"
	case e == stats.LowerBound:
		return "the figure is a lower bound (the trace started late or wrapped): the true value may be higher"
	case hasBase && be == stats.Unknown:
		return "the baseline cannot tell this figure"
	case hasBase && be == stats.LowerBound:
		return "the baseline's figure is a lower bound"
	}
	return ""
}

// Cause says where a difference from the baseline comes from, for a
// figure that depends on the allocator.
type Cause int

const (
	// CauseNone: not judged (the figure follows the requests alone, or
	// the files cannot tell).
	CauseNone Cause = iota
	// CauseAllocator: both runs made the same requests (SameRequests), so
	// a difference is the allocator's placement, caching or settings.
	CauseAllocator
	// CauseAllocatorLikely: allocated_bytes.all.peak is the same on both
	// runs, but the request sequences could not be compared.
	CauseAllocatorLikely
	// CauseRequests: the requests changed; AllocatedDelta says how much
	// allocated_bytes.all.peak moved.
	CauseRequests
	// CauseRounding: the same requests, yet allocated (or active) bytes
	// differ: the blocks were rounded differently (roundup_power2_divisions).
	CauseRounding
)

// cause decides a Result's Cause and AllocatedDelta: with the same
// requests (every alloc the same size, in order), a difference in an
// allocator figure is the allocator's, and one in allocated or active
// bytes the block rounding's (a setting such as roundup_power2_divisions);
// otherwise allocated_bytes.all.peak says how much the requests moved.
func cause(res *Result, f Figures, base *Baseline) {
	if base == nil {
		return
	}
	a, ok1 := f["allocated_bytes.all.peak"]
	b, ok2 := base.Figures["allocated_bytes.all.peak"]
	exact := ok1 && ok2 && a.Exactness == stats.Exact && b.Exactness == stats.Exact
	if exact {
		res.AllocatedDelta = a.Value - b.Value
	}
	if !DependsOnAllocator(res.Rule.Key) {
		if base.Known && base.SameRequests && res.Value != res.Base && res.Exactness == stats.Exact && res.BaseExactness == stats.Exact {
			res.Cause = CauseRounding
		}
		return
	}
	switch {
	case base.Known && base.SameRequests:
		res.Cause = CauseAllocator
	case base.Known:
		res.Cause = CauseRequests
	case !exact:
	case a.Value == b.Value:
		res.Cause = CauseAllocatorLikely
	default:
		res.Cause = CauseRequests
	}
}

// Failed reports whether any result fails; with strict, an unknown result
// counts as a failure too.
func Failed(results []Result, strict bool) bool {
	for _, r := range results {
		if r.Verdict == Fail || (strict && r.Verdict == Unknown) {
			return true
		}
	}
	return false
}

// SameRequests reports whether two traces of one device made the same
// requests: the same sequence of alloc sizes (requested bytes), entry
// for entry. Both traces must cover their runs from the first allocation
// (the caller checks the history is exact); an OOM that stopped one run
// early makes them differ.
func SameRequests(a, b []snapshot.TraceEntry) bool {
	i, j := 0, 0
	for {
		for i < len(a) && a[i].Action != snapshot.ActionAlloc {
			i++
		}
		for j < len(b) && b[j].Action != snapshot.ActionAlloc {
			j++
		}
		if i == len(a) || j == len(b) {
			return i == len(a) && j == len(b)
		}
		if a[i].Size != b[j].Size {
			return false
		}
		i++
		j++
	}
}
