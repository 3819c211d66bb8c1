package monitor

import "github.com/snapview/snapview/analyze/stats"

// Finding kinds of [Check].
const (
	FindingRetries       = "retries"
	FindingOOMs          = "ooms"
	FindingFragmentation = "fragmentation"
	FindingOversize      = "oversize"
)

// Finding is one warning about a memory_stats() dump.
type Finding struct {
	// Kind is one of the Finding* constants.
	Kind string
	// Figures are the memory_stats() keys and values it rests on, in the
	// order a message cites them.
	Figures []stats.Figure
}

// FragmentationRatio and FragmentationMin are when [Check] calls reserved
// memory much larger than allocated memory: reserved at least
// FragmentationRatio times allocated and more than FragmentationMin bytes
// above it.
const (
	FragmentationRatio = 1.5
	FragmentationMin   = 256 << 20
)

// Check returns the warnings a memory_stats() dump deserves, in this
// order:
//
//   - retries: num_alloc_retries > 0, the caching allocator could not
//     satisfy a request from its cache or a new cudaMalloc, freed its
//     cached blocks (synchronizing every stream) and tried again: the run
//     is near an OOM, and slow (CUDACachingAllocator.cpp malloc,
//     release_cached_blocks);
//   - ooms: num_ooms > 0, a request failed even after that;
//   - fragmentation: reserved_bytes.all.current much larger than
//     allocated_bytes.all.current (see FragmentationRatio); the
//     inactive_split figures say how much of the difference sits in free
//     pieces of split segments, which only that segment's blocks can use;
//   - oversize: oversize_allocations.allocated > 0, requests above
//     max_split_size (PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb) that
//     never split and only reuse a cached block up to max_split_size +
//     20 MiB larger (CUDACachingAllocator.cpp get_free_block).
//
// Figures that are not exact are not judged.
func Check(st *stats.MemoryStats) []Finding {
	var out []Finding
	fig := func(key string, v int64) stats.Figure {
		return stats.Figure{Key: key, Value: v, Exactness: stats.Exact}
	}
	k := st.Known
	if k.NumAllocRetries == stats.Exact && st.NumAllocRetries > 0 {
		out = append(out, Finding{Kind: FindingRetries, Figures: []stats.Figure{
			fig("num_alloc_retries", st.NumAllocRetries), fig("num_sync_all_streams", st.NumSyncAllStreams)}})
	}
	if k.NumOOMs == stats.Exact && st.NumOOMs > 0 {
		out = append(out, Finding{Kind: FindingOOMs, Figures: []stats.Figure{fig("num_ooms", st.NumOOMs)}})
	}
	if k.Current == stats.Exact {
		res, alloc := st.ReservedBytes[stats.PoolAll].Current, st.AllocatedBytes[stats.PoolAll].Current
		if res-alloc > FragmentationMin && float64(res) >= FragmentationRatio*float64(alloc) {
			out = append(out, Finding{Kind: FindingFragmentation, Figures: []stats.Figure{
				fig("reserved_bytes.all.current", res),
				fig("allocated_bytes.all.current", alloc),
				fig("inactive_split_bytes.all.current", st.InactiveSplitBytes[stats.PoolAll].Current),
				fig("inactive_split.all.current", st.InactiveSplit[stats.PoolAll].Current),
				fig("inactive_split_bytes.large_pool.current", st.InactiveSplitBytes[stats.PoolLarge].Current),
				fig("inactive_split_bytes.small_pool.current", st.InactiveSplitBytes[stats.PoolSmall].Current),
			}})
		}
	}
	if k.History == stats.Exact && st.OversizeAllocations.Allocated > 0 {
		out = append(out, Finding{Kind: FindingOversize, Figures: []stats.Figure{
			fig("oversize_allocations.allocated", st.OversizeAllocations.Allocated),
			fig("oversize_allocations.current", st.OversizeAllocations.Current),
			fig("oversize_segments.current", st.OversizeSegments.Current),
			fig("max_split_size", st.MaxSplitSize),
		}})
	}
	return out
}
