package stats

// Pool selects a row of memory_stats(): all pools, the large pool or the
// small pool (torch.cuda.memory_stats keys "all", "large_pool",
// "small_pool").
type Pool int

// The pools, in the order memory_summary() prints them.
const (
	PoolAll Pool = iota
	PoolLarge
	PoolSmall
	NumPools
)

// String returns the memory_stats() key of the pool.
func (p Pool) String() string {
	switch p {
	case PoolAll:
		return "all"
	case PoolLarge:
		return "large_pool"
	case PoolSmall:
		return "small_pool"
	}
	return "?"
}

// Stat is one memory_stats() family: "current", "peak", "allocated"
// (cumulative increases) and "freed" (cumulative decreases), in bytes or
// counts (c10/core/CachingDeviceAllocator.h Stat).
type Stat struct {
	Current, Peak, Allocated, Freed int64
}

// Exactness says how much a figure can be trusted.
type Exactness uint8

const (
	// Unknown: the file does not carry what is needed (print "?").
	Unknown Exactness = iota
	// Exact: equal to what torch.cuda.memory_stats() reported.
	Exact
	// LowerBound: the trace does not cover the whole run (recording
	// started late or the ring buffer wrapped); the true figure is at
	// least this.
	LowerBound
)

// String names the exactness as --format json prints it.
func (e Exactness) String() string {
	switch e {
	case Exact:
		return "exact"
	case LowerBound:
		return "lower_bound"
	}
	return "unknown"
}

// MemoryStats mirrors torch.cuda.memory_stats(device): each [NumPools]Stat
// is indexed by Pool. Byte families are in bytes.
type MemoryStats struct {
	Device int

	Allocation    [NumPools]Stat // "allocation": count of active_allocated blocks
	Segment       [NumPools]Stat // "segment": count of cudaMalloc'd segments
	Active        [NumPools]Stat // "active": count of active_* blocks
	InactiveSplit [NumPools]Stat // "inactive_split": count of free blocks in split segments

	AllocatedBytes     [NumPools]Stat // "allocated_bytes"
	ReservedBytes      [NumPools]Stat // "reserved_bytes"
	ActiveBytes        [NumPools]Stat // "active_bytes"
	InactiveSplitBytes [NumPools]Stat // "inactive_split_bytes"
	RequestedBytes     [NumPools]Stat // "requested_bytes"

	OversizeAllocations Stat // "oversize_allocations"
	OversizeSegments    Stat // "oversize_segments"

	NumAllocRetries int64 // "num_alloc_retries"
	// NumAllocRetriesMax is the most NumAllocRetries can be when a trace
	// bounds it from above (see RetriesRange); 0 when nothing does.
	NumAllocRetriesMax int64
	NumOOMs            int64 // "num_ooms"
	NumSyncAllStreams  int64 // "num_sync_all_streams"
	NumDeviceAlloc     int64 // "num_device_alloc"
	NumDeviceFree      int64 // "num_device_free"
	MaxSplitSize       int64 // "max_split_size" in bytes, -1 = unlimited

	// Known says which figures are exact, lower bounds or unknown.
	Known Known
}

// Known records the exactness of each kind of figure in a MemoryStats.
type Known struct {
	// Current covers every Stat.Current (the Cur Usage column).
	Current Exactness
	// History covers Peak, Allocated and Freed (Peak Usage, Tot Alloc,
	// Tot Freed).
	History Exactness
	// NumOOMs covers NumOOMs ("CUDA OOMs").
	NumOOMs Exactness
	// NumAllocRetries covers NumAllocRetries ("cudaMalloc retries").
	NumAllocRetries Exactness
	// NumSyncAllStreams covers NumSyncAllStreams: exact only when the
	// figures come from torch itself (StatsFromFlat); a trace does not
	// show synchronize_and_free_events, so a replay leaves it Unknown.
	NumSyncAllStreams Exactness
	// Why says, in a sentence without its full stop, why History is not
	// Exact ("" when it is): the one reason every view prints beside the
	// figures it marks. See [DecideTrust].
	Why string
	// Seeded is the replay's Result.Seeded: the trace misses the start, so
	// the state before it was rebuilt (how views word the coverage).
	Seeded bool
	// Requested covers what the file's requested sizes feed: every
	// requested_bytes figure and each block's or allocation's requested
	// size (the Requested columns, and the rounding slack taken from
	// them). Exact or Unknown: Unknown when the device's requested sizes
	// cannot be right (see [DecideTrust]), whatever Current and History
	// say. A requested figure is as trusted as the worse of Requested and
	// its column's exactness: see [Known.RequestedCurrent] and
	// [Known.RequestedHistory].
	Requested Exactness
	// RequestedWhy says, in a sentence without its full stop, why
	// Requested is Unknown ("" when it is Exact).
	RequestedWhy string
}

// RequestedCurrent is the exactness of the requested bytes at the dump
// (requested_bytes.*.current, the Requested columns of the segments and
// blocks): the worse of Requested and Current.
func (k Known) RequestedCurrent() Exactness { return worse(k.Requested, k.Current) }

// RequestedHistory is the exactness of requested_bytes.*.peak, .allocated
// and .freed: the worse of Requested and History.
func (k Known) RequestedHistory() Exactness { return worse(k.Requested, k.History) }

// worse returns the less trusted of a and b: Unknown before LowerBound
// before Exact.
func worse(a, b Exactness) Exactness {
	rank := func(e Exactness) int {
		switch e {
		case Exact:
			return 2
		case LowerBound:
			return 1
		}
		return 0
	}
	if rank(a) < rank(b) {
		return a
	}
	return b
}

// RetriesRange returns the interval num_alloc_retries lies in when the
// figure is a lower bound that the trace also bounds from above
// (NumAllocRetriesMax, set by a replay whose history is exact): lo is
// NumAllocRetries, hi NumAllocRetriesMax. ok is false when there is no
// such interval (the figure is exact, unknown, or bounded from below
// only).
func (s *MemoryStats) RetriesRange() (lo, hi int64, ok bool) {
	if s.Known.NumAllocRetries != LowerBound || s.Known.History != Exact || s.NumAllocRetriesMax <= s.NumAllocRetries {
		return s.NumAllocRetries, 0, false
	}
	return s.NumAllocRetries, s.NumAllocRetriesMax, true
}
