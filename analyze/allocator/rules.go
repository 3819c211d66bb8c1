// Package allocator holds the rules of PyTorch's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator, as of torch
// 2.11) and its settings (PYTORCH_CUDA_ALLOC_CONF, parsed as
// c10/core/AllocatorConfig.cpp and c10/cuda/CUDAAllocatorConfig.cpp do).
//
// Both the replay of a recorded trace (package analyze/replay) and the what-if
// simulation (package analyze/whatif) take every rule from here: how a
// request is rounded, which pool it goes to, how much a new segment
// reserves, when a free block is split, and which cached blocks a request
// may not take. All sizes are in bytes.
package allocator

import (
	"math/bits"

	"github.com/snapview/snapview/snapshot"
)

// Constants of CUDACachingAllocator.cpp and c10/core/AllocatorConfig.h.
const (
	// MinBlockSize is kMinBlockSize: every block is a multiple of 512 bytes.
	MinBlockSize = 512
	// SmallSize is kSmallSize: requests up to 1 MiB use the small pool.
	SmallSize = 1 << 20
	// SmallBuffer is kSmallBuffer: a small-pool segment, and the page of
	// a small-pool expandable segment, is 2 MiB.
	SmallBuffer = 2 << 20
	// LargeBuffer is kLargeBuffer: requests between 1 and 10 MiB get a
	// 20 MiB segment; the page of a large-pool expandable segment; the
	// default max_non_split_rounding.
	LargeBuffer = 20 << 20
	// MinLargeAlloc is kMinLargeAlloc: requests of 10 MiB and more get a
	// segment of their own size rounded to RoundLarge.
	MinLargeAlloc = 10 << 20
	// RoundLarge is kRoundLarge.
	RoundLarge = 2 << 20

	// roundupIntervals is kRoundUpPowerOfTwoIntervals: the power-of-two
	// intervals of roundup_power2_divisions, from 1 MiB ([1, 2) MiB is the
	// first) to 64 GiB (sizes from 32 GiB take the last).
	roundupIntervals = 16
)

// A Rounding rounds a request of size bytes to the size of the block that
// serves it. [Config.RoundSize] uses Config.Rounding when it is set, so a
// producer with its own rule (another accelerator's allocator) can be
// replayed and simulated with the same machinery. A Rounding value must be
// comparable (Config values are compared with ==).
type Rounding interface {
	Round(size int64) int64
	// String names the rule for people, e.g. "round_up(size+32, 512)".
	String() string
}

// RoundSize mirrors round_size() of CUDACachingAllocator.cpp: a request
// under 512 bytes takes 512; with roundup_power2_divisions d > 1 for the
// request's power-of-two interval (AllocatorConfig::roundup_power2_divisions)
// and a request over 512*d bytes, the next of d equal divisions of the
// interval (roundup_power2_next_division); otherwise the next multiple of
// 512. When c.Rounding is set, its rule replaces torch's.
func (c *Config) RoundSize(size int64) int64 {
	if c.Rounding != nil {
		return c.Rounding.Round(size)
	}
	if size < MinBlockSize {
		return MinBlockSize
	}
	if d := c.divisionsFor(size); d > 1 && size > MinBlockSize*d {
		return RoundupPower2NextDivision(size, d)
	}
	return (size + MinBlockSize - 1) / MinBlockSize * MinBlockSize
}

// divisionsFor mirrors AcceleratorAllocatorConfig::roundup_power2_divisions(size):
// the divisions of the interval holding size (index log2(size) - 20,
// clamped to the 16 intervals).
func (c *Config) divisionsFor(size int64) int64 {
	i := bits.Len64(uint64(size)) - 1 - 20
	i = max(0, min(i, roundupIntervals-1))
	return c.Divisions[i]
}

// RoundupPower2NextDivision mirrors roundup_power2_next_division(): size
// rounded up to the next of divisions equal steps between the powers of
// two around it; powers of two are unchanged.
func RoundupPower2NextDivision(size, divisions int64) int64 {
	if size&(size-1) == 0 {
		return size
	}
	floor := int64(1) << (bits.Len64(uint64(size)) - 1)
	step := floor >> (bits.Len64(uint64(divisions)) - 1)
	if step == 0 {
		return floor << 1
	}
	f := size &^ (step - 1)
	if f == size {
		return size
	}
	return f + step
}

// IsSmall mirrors get_pool(): a rounded request of at most 1 MiB
// (kSmallSize) goes to the small pool, a larger one to the large pool.
func IsSmall(rounded int64) bool { return rounded <= SmallSize }

// IsLargeRequest reports whether a request of size bytes (unrounded) goes
// to the large pool: get_pool(round_size(size)).
func (c *Config) IsLargeRequest(size int64) bool { return !IsSmall(c.RoundSize(size)) }

// IsLargeSegmentSize reports whether a segment of size bytes belongs to
// the large pool when nothing else says: a small-pool segment is always
// 2 MiB (kSmallBuffer, get_allocation_size), a large-pool one is not (20
// MiB, or a request of at least 10 MiB rounded to 2 MiB).
func IsLargeSegmentSize(size int64) bool { return size != SmallBuffer }

// IsLargeSegment reports whether a segment of a snapshot belongs to the
// large pool: its segment_type when the file gives one, else
// [IsLargeSegmentSize] of its total_size.
func IsLargeSegment(s *snapshot.Segment) bool {
	switch s.Type {
	case "small":
		return false
	case "large":
		return true
	}
	return IsLargeSegmentSize(s.TotalSize)
}

// PageSize is the granularity at which an expandable segment of the small
// (small true) or large pool maps memory: kSmallBuffer or kLargeBuffer
// (the segment_size of ExpandableSegment, CUDACachingAllocator.cpp).
func PageSize(small bool) int64 {
	if small {
		return SmallBuffer
	}
	return LargeBuffer
}

// AllocationSize mirrors get_allocation_size(): the bytes a new segment
// reserves for a rounded request: 2 MiB (kSmallBuffer) for the small pool,
// 20 MiB (kLargeBuffer) for requests under 10 MiB, else the request
// rounded up to 2 MiB (kRoundLarge).
func AllocationSize(rounded int64) int64 {
	switch {
	case rounded <= SmallSize:
		return SmallBuffer
	case rounded < MinLargeAlloc:
		return LargeBuffer
	default:
		return (rounded + RoundLarge - 1) / RoundLarge * RoundLarge
	}
}

// ShouldSplit mirrors should_split(): whether a free block of blockSize
// bytes that serves a rounded request of size bytes is split, the rest
// going back to the pool. Blocks of the small pool, and every block while
// expandable_segments is on (the setting, not the block's segment), split
// when at least 512 bytes remain; large-pool blocks split when the request
// is under max_split_size and more than 1 MiB (kSmallSize) remains.
func (c *Config) ShouldSplit(small bool, blockSize, size int64) bool {
	remaining := blockSize - size
	if small || c.ExpandableSegments {
		return remaining >= MinBlockSize
	}
	return size < c.MaxSplitSize && remaining > SmallSize
}

// RejectsCachedBlock mirrors the two oversize checks at the end of
// get_free_block(): the best-fitting cached block of blockSize bytes is
// not used for a rounded request of size bytes when the request is under
// max_split_size and the block is not (an oversize block is never handed
// to a request it would have to be split for), or when the request is
// oversize and the block is max_non_split_rounding (20 MiB by default) or
// more larger than it.
func (c *Config) RejectsCachedBlock(blockSize, size int64) bool {
	if size < c.MaxSplitSize && blockSize >= c.MaxSplitSize {
		return true
	}
	return size >= c.MaxSplitSize && blockSize >= size+c.MaxNonSplitRounding
}

// IsOversize reports whether a block or segment of size bytes counts as
// oversize in memory_stats() (oversize_allocations, oversize_segments:
// size >= max_split_size).
func (c *Config) IsOversize(size int64) bool { return size >= c.MaxSplitSize }

// NPURounding is the rounding of torch_npu's NPU caching allocator
// (Ascend), which keeps this allocator's snapshot schema: round_size in
// torch_npu's NPUCachingAllocator.cpp adds 32 bytes of padding before
// rounding up to kMinBlockSize, round_up(size + 32, 512). Its other rules
// (pools, segment sizes, splitting) are the CUDA allocator's.
type NPURounding struct{}

// Round returns round_up(size + 32, 512).
func (NPURounding) Round(size int64) int64 {
	return (size + 32 + MinBlockSize - 1) / MinBlockSize * MinBlockSize
}

// String names the rule.
func (NPURounding) String() string { return "round_up(size + 32, 512)" }
