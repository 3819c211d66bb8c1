package whatif

import (
	"fmt"
	"github.com/snapview/snapview/internal/units"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// Where the cap simulated came from (Result.LimitSource).
const (
	LimitNone             = ""                  // no cap: the run is simulated uncapped
	LimitFlag             = "flag"              // Options.Limit (--limit)
	LimitOOMMessage       = "oom-message"       // torch's OOM message (--oom-message)
	LimitInferredOOM      = "inferred-oom"      // bounded by the trace's first oom entry
	LimitInferredReleases = "inferred-releases" // bounded by the cached-segment frees before new segments
)

// Bounds are the bounds of a cap the file only bounds, bytes, both
// included: the run's cap is one of [Min, Max].
type Bounds struct {
	Min, Max int64
}

// Figure is a figure torch printed with format_size (CUDACachingAllocator.cpp):
// two decimals of bytes, KiB, MiB or GiB, so it stands for any byte count
// in [Min, Max]. Text is the figure as printed.
type Figure struct {
	Text     string
	Min, Max int64
}

// OOMMessage holds the figures of torch's OutOfMemoryError message
// (DeviceCachingAllocator::malloc in c10/cuda/CUDACachingAllocator.cpp:
// "CUDA out of memory. Tried to allocate X. GPU 0 has a total capacity of
// T of which F is free. Process P has N memory in use. Including
// non-PyTorch memory, this process has M memory in use. A allowed; Of the
// allocated memory ..."). A figure the message does not have is nil.
type OOMMessage struct {
	Requested *Figure // "Tried to allocate X"
	Capacity  *Figure // "total capacity of T": the device's memory
	Free      *Figure // "of which F is free": free device memory at the failure
	// InUse is "this process has M memory in use" (PyTorch's reserved
	// memory plus the CUDA context and other non-PyTorch memory).
	InUse *Figure
	// Others are "Process P has N memory in use" of other processes.
	Others []Figure
	// Allowed is "A allowed": set_per_process_memory_fraction x the
	// device's memory, allowed_memory_maximum; nil without a fraction.
	Allowed *Figure
	// Allocated and Unallocated are "X is allocated by PyTorch" and "Y is
	// reserved by PyTorch but unallocated".
	Allocated, Unallocated *Figure
}

var (
	sizeRE      = `([0-9]+(?:\.[0-9]+)?) (bytes|KiB|MiB|GiB)`
	reRequested = regexp.MustCompile(`Tried to allocate ` + sizeRE)
	reCapacity  = regexp.MustCompile(`total capacity of ` + sizeRE + `(?: of which ` + sizeRE + ` is free)?`)
	reInUse     = regexp.MustCompile(`this process has ` + sizeRE + ` memory in use`)
	reOther     = regexp.MustCompile(`Process [0-9]+ has ` + sizeRE + ` memory in use`)
	reAllowed   = regexp.MustCompile(sizeRE + ` allowed`)
	reAllocated = regexp.MustCompile(sizeRE + ` is allocated by PyTorch`)
	reUnalloc   = regexp.MustCompile(sizeRE + ` is reserved by PyTorch but unallocated`)
)

// figure reads the number and unit of a format_size figure: the value is
// rounded to two decimals, so the bytes lie within half a hundredth of
// the unit either side.
func figure(num, unit string) *Figure {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return nil
	}
	mult := map[string]float64{"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]
	f := &Figure{Text: num + " " + unit}
	if unit == "bytes" {
		f.Min, f.Max = int64(v), int64(v)
		return f
	}
	f.Min = int64(math.Ceil((v - 0.005) * mult))
	f.Max = int64(math.Floor((v + 0.005) * mult))
	return f
}

// ParseOOMMessage reads torch's OutOfMemoryError message. It returns an
// error when the text has none of the figures (not such a message).
func ParseOOMMessage(text string) (*OOMMessage, error) {
	text = strings.Join(strings.Fields(text), " ")
	m := &OOMMessage{}
	one := func(re *regexp.Regexp) *Figure {
		if g := re.FindStringSubmatch(text); g != nil {
			return figure(g[1], g[2])
		}
		return nil
	}
	m.Requested = one(reRequested)
	if g := reCapacity.FindStringSubmatch(text); g != nil {
		m.Capacity = figure(g[1], g[2])
		if g[3] != "" {
			m.Free = figure(g[3], g[4])
		}
	}
	m.InUse = one(reInUse)
	for _, g := range reOther.FindAllStringSubmatch(text, -1) {
		if f := figure(g[1], g[2]); f != nil {
			m.Others = append(m.Others, *f)
		}
	}
	m.Allowed = one(reAllowed)
	m.Allocated = one(reAllocated)
	m.Unallocated = one(reUnalloc)
	if m.Requested == nil && m.Capacity == nil && m.Allowed == nil && m.InUse == nil && len(m.Others) == 0 {
		return nil, fmt.Errorf("not a CUDA out-of-memory message: none of \"Tried to allocate\", \"total capacity of\", " +
			"\"allowed\", \"memory in use\" found")
	}
	return m, nil
}

// capBounds decides the cap the rows are simulated under: the flag's,
// else an interval from the OOM message, the trace's first oom entry or
// the cached-segment frees before new segments, intersected with what the
// trace allows. It returns the bounds (Min == Max for one cap; both 0 for
// none), the source, and a note on a message figure the trace
// contradicts.
func capBounds(trace []snapshot.TraceEntry, r *replay.Result, own allocator.Config, opts Options) (Bounds, string, string) {
	if opts.Limit > 0 {
		return Bounds{opts.Limit, opts.Limit}, LimitFlag, ""
	}
	oom := inferLimit(trace, r, own)
	if msg := opts.OOMMessage; msg != nil {
		var b Bounds
		switch {
		case msg.Allowed != nil:
			b = Bounds{msg.Allowed.Min, msg.Allowed.Max}
		case msg.Free != nil && oom != nil && oom.atOOM >= 0:
			// No fraction: cudaMalloc failed for want of device memory;
			// the cap on reserved is what was reserved then plus what was
			// free.
			b = Bounds{oom.atOOM + msg.Free.Min, oom.atOOM + msg.Free.Max}
		}
		if b.Max > 0 {
			if oom != nil {
				if nb := (Bounds{max(b.Min, oom.Min), min(b.Max, oom.Max)}); nb.Min <= nb.Max {
					return nb, LimitOOMMessage, ""
				}
				return oom.Bounds, LimitInferredOOM, fmt.Sprintf("the message's cap (%s to %s bytes) is outside what the trace allows "+
					"(%s to %s bytes): the message is not this run's; the trace's bounds are used", units.Int(b.Min), units.Int(b.Max), units.Int(oom.Min), units.Int(oom.Max))
			}
			low := highestReserved(trace, r, own)
			if b.Max >= low {
				return Bounds{max(b.Min, low), b.Max}, LimitOOMMessage, ""
			}
			return Bounds{}, LimitNone, fmt.Sprintf("the message's cap (at most %s bytes) is below the %s bytes the trace reserves: "+
				"the message is not this run's", units.Int(b.Max), units.Int(low))
		}
	}
	if oom != nil {
		return oom.Bounds, LimitInferredOOM, ""
	}
	if b := inferFromReleases(trace, r, own); b != nil {
		return *b, LimitInferredReleases, ""
	}
	return Bounds{}, LimitNone, ""
}

// oomBounds are the bounds of the cap an oom entry gives, with the
// reserved bytes when the request failed (atOOM).
type oomBounds struct {
	Bounds
	atOOM int64
}

// highestReserved is the highest reserved bytes of the trace, and for
// expandable segments the request a run of segment_map entries served
// (alloc_block checked its whole get_allocation_size against the cap
// before mapping what was missing).
func highestReserved(trace []snapshot.TraceEntry, r *replay.Result, own allocator.Config) int64 {
	low, _, _ := scanReserved(trace, r, own, nil)
	return low
}

// scanReserved walks the trace's reserved bytes. It returns the highest
// reserved (as highestReserved), the reserved bytes when the first oom
// entry failed (-1 without one) and that entry's segment need. release,
// when set, is called for each run of segment_free or segment_unmap
// entries followed (after free_completed entries) by a new segment, with
// the reserved bytes before the run and the bytes the new segment's
// request needed (get_allocation_size).
func scanReserved(trace []snapshot.TraceEntry, r *replay.Result, own allocator.Config,
	release func(before, need int64)) (low, atOOM, need int64) {
	var reserved int64
	for _, sg := range r.InitialState() {
		reserved += sg.TotalSize
	}
	low, atOOM = reserved, -1
	mapStart := int64(-1) // reserved before a run of segment_map entries
	runStart := int64(-1) // reserved before a run of releases
	for i := range trace {
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			if runStart >= 0 && release != nil {
				n := e.Size
				if e.Action == snapshot.ActionSegmentMap {
					n = max(n, requestNeed(trace, i, own))
				}
				release(runStart, n)
			}
			runStart = -1
			if e.Action == snapshot.ActionSegmentMap && mapStart < 0 {
				mapStart = reserved
			}
			reserved += e.Size
			low = max(low, reserved)
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			if runStart < 0 {
				runStart = reserved
			}
			reserved -= e.Size
		case snapshot.ActionFreeCompleted:
		case snapshot.ActionAlloc:
			runStart = -1
			if mapStart >= 0 {
				low = max(low, mapStart+allocator.AllocationSize(own.RoundSize(e.Size)))
				mapStart = -1
			}
		case snapshot.ActionOOM:
			runStart, mapStart = -1, -1
			if atOOM < 0 {
				atOOM = reserved
				need = allocator.AllocationSize(e.Size)
			}
		default:
			runStart = -1
		}
	}
	return low, atOOM, need
}

// requestNeed is get_allocation_size of the request a run of segment_map
// entries starting at entry k served (the alloc or oom entry after it), 0
// when none follows.
func requestNeed(trace []snapshot.TraceEntry, k int, own allocator.Config) int64 {
	for j := k + 1; j < len(trace); j++ {
		switch a := &trace[j]; a.Action {
		case snapshot.ActionAlloc:
			return allocator.AllocationSize(own.RoundSize(a.Size))
		case snapshot.ActionOOM:
			return allocator.AllocationSize(a.Size)
		case snapshot.ActionSegmentMap:
		default:
			return 0
		}
	}
	return 0
}

// inferLimit bounds the cap from the first oom entry of trace: the cap is
// at least the highest reserved seen (every segment the run got fit under
// it; with expandable segments, alloc_block checked the request's whole
// get_allocation_size before mapping what was missing) and less than the
// reserved bytes when the request failed plus the segment it needed
// (get_allocation_size of the rounded request, which the entry records).
// When the entry's device_free is less than that segment, cudaMalloc
// itself failed (the device was full, no fraction needed): the cap is
// then the reserved bytes plus device_free. nil when the trace has no oom
// entry or the bounds contradict each other.
func inferLimit(trace []snapshot.TraceEntry, r *replay.Result, own allocator.Config) *oomBounds {
	low, atOOM, need := scanReserved(trace, r, own, nil)
	if atOOM < 0 {
		return nil
	}
	b := &oomBounds{Bounds: Bounds{Min: low, Max: atOOM + need - 1}, atOOM: atOOM}
	for i := range trace {
		if e := &trace[i]; e.Action == snapshot.ActionOOM {
			if free := e.DeviceFree(); free > 0 && free < need {
				if c := atOOM + free; c >= low && c <= b.Max {
					b.Min, b.Max = c, c
				}
			}
			break
		}
	}
	if b.Max < b.Min {
		return nil
	}
	return b
}

// inferFromReleases bounds the cap of a run that did not run out of
// memory from the runs of cached-segment frees right before a new
// segment. Under a cap, malloc frees cached segments only when the new
// segment would pass it (alloc_block fails; release_available_cached_blocks,
// then release_cached_blocks and the retry), so before such a run the
// reserved bytes plus the segment needed were over the cap; under
// garbage_collection_threshold g, garbage_collect_cached_blocks frees them
// when reserved is over g x the cap. A run that cannot have been either
// (its reserved plus need is at most the highest reserved, which fit) is
// an empty_cache() call. The cap is at least the highest reserved and
// less than the smallest of those sums (with garbage collection, which
// cannot be told from the other, the larger of the sum and reserved / g).
// nil when no run bounds it.
func inferFromReleases(trace []snapshot.TraceEntry, r *replay.Result, own allocator.Config) *Bounds {
	type rel struct{ before, need int64 }
	var rels []rel
	low, _, _ := scanReserved(trace, r, own, func(before, need int64) { rels = append(rels, rel{before, need}) })
	hi := int64(math.MaxInt64)
	for _, x := range rels {
		bound := int64(math.MaxInt64)
		if x.before+x.need > low {
			bound = x.before + x.need - 1
		}
		if g := own.GarbageCollectionThreshold; g > 0 {
			// Or garbage_collect_cached_blocks: reserved > g x cap. The
			// trace does not say which, so the weaker bound holds.
			bound = int64(math.Ceil(float64(x.before)/g)) - 1
			if x.before+x.need > low {
				bound = max(bound, x.before+x.need-1)
			}
		}
		hi = min(hi, bound)
	}
	if hi == math.MaxInt64 || hi < low {
		return nil
	}
	return &Bounds{Min: low, Max: hi}
}
