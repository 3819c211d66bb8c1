// Package stats holds the figures of torch.cuda.memory_stats() for one
// device (MemoryStats: one Stat of current, peak, allocated and freed per
// pool and figure, torch/cuda/memory.py memory_stats, counted as
// c10/cuda/CUDACachingAllocator.cpp DeviceCachingAllocator does, in the
// c10/core/CachingDeviceAllocator.h Stat struct), how far each figure can
// be trusted (Known: exact, lower bound or unknown), the current figures a
// snapshot's segments give (CurrentStats), and the flat dict memory_stats()
// returns, with the JSON dumps of it (Flat, ParseStatsJSON).
//
// The history half of the trust rule, which needs a replay, is
// replay.DecideTrust; the requested half is RequestedTrust here. Sizes are
// bytes. The package never prints and never does I/O.
package stats
