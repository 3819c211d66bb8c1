package snapshot

import (
	"errors"
	"fmt"
	"strings"
)

// ErrMemoryStats marks a file that holds torch.cuda.memory_stats() (the
// flat dict of allocator counters, e.g. saved with json.dump), not a
// memory snapshot. An error that wraps it wraps ErrNotSnapshot too.
var ErrMemoryStats = errors.New("memory_stats() figures, not a snapshot")

// memoryStatsPrefixes are the key families of torch.cuda.memory_stats()
// (torch/cuda/memory.py memory_stats, from the allocator's DeviceStats).
var memoryStatsPrefixes = []string{
	"allocated_bytes.", "reserved_bytes.", "active_bytes.", "requested_bytes.", "inactive_split_bytes.",
	"allocation.", "segment.", "active.", "inactive_split.", "oversize_allocations.", "oversize_segments.",
	"num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free", "max_split_size",
}

// LooksLikeMemoryStats reports whether the keys of a top-level dict are
// those of torch.cuda.memory_stats(): at least three, most of them of its
// families ("allocated_bytes.all.current", "num_alloc_retries", ...).
func LooksLikeMemoryStats(keys []string) bool {
	n := 0
	for _, k := range keys {
		for _, p := range memoryStatsPrefixes {
			if strings.HasPrefix(k, p) {
				n++
				break
			}
		}
	}
	return n >= 3 && 2*n >= len(keys)
}

// MemoryStatsError is the error for a file of memory_stats() figures with
// keys top-level keys: it says what the file is and what reads it. It
// wraps ErrMemoryStats and ErrNotSnapshot.
func MemoryStatsError(keys int) error { return &memoryStatsError{keys: keys} }

type memoryStatsError struct{ keys int }

func (e *memoryStatsError) Error() string {
	return fmt.Sprintf("a torch.cuda.memory_stats() dict (%d counters such as allocated_bytes.all.current), not a memory snapshot: "+
		"`snapview summary --format torch FILE` prints its memory_summary() table; the other commands need a "+
		"torch.cuda.memory._dump_snapshot() file", e.keys)
}

func (e *memoryStatsError) Unwrap() []error { return []error{ErrMemoryStats, errNotSnapshot} }
