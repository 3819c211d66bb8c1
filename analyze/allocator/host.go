package allocator

import "math/bits"

// The rules of PyTorch's caching host (pinned memory) allocator,
// CachingHostAllocatorImpl in aten/src/ATen/core/CachingHostAllocator.h,
// which CUDA's pinned allocator (aten/src/ATen/cuda/CachingHostAllocator.cpp)
// specialises. Unlike the device allocator it never splits a block: every
// block is one host allocation (cudaHostAlloc or cudaHostRegister), and
// PyTorch 2.14's snapshot lists each block as a segment of its own
// (host_segments). The replay of host_traces (package analyze/hostreplay)
// takes every rule from here. Sizes are in bytes.

// HostSizeIndex mirrors CachingHostAllocatorImpl::size_index
// (c10::llvm::Log2_64_Ceil): the free list a block of size bytes is cached
// in, within its pool. CachingHostAllocatorImpl::allocate rounds a request
// up to a power of two (c10::llvm::PowerOf2Ceil) only when it is at most
// pinned_max_round_threshold and pinned_max_cached_size; a larger one is
// pinned at its own size and shares the free list of the power of two
// above it. Every host trace entry records the block's size
// (record_trace(..., block->size_, ...)), so the replay needs no rounding
// rule of its own.
func HostSizeIndex(size int64) int {
	if size <= 1 {
		return 0
	}
	return bits.Len64(uint64(size - 1))
}

// HostFreeList is one of CachingHostAllocatorImpl's free lists (a
// HostBlockPool's free_list_, one std::deque per size index; the default
// pool and each private pool of a graph capture, HostPrivatePool, have
// their own): a freed block whose recorded streams'
// events have completed is pushed at the back (free, and
// process_events_for_specific_size once its event_count_ reaches 0), and
// get_free_block pops from the back, so a request reuses the block cached
// last (LIFO). Addresses are the blocks' base pointers.
type HostFreeList[T comparable] struct {
	list []T
}

// Push caches a block (its events all complete) at the back.
func (l *HostFreeList[T]) Push(b T) { l.list = append(l.list, b) }

// Back returns the block get_free_block would hand out next, and false
// when the list is empty.
func (l *HostFreeList[T]) Back() (T, bool) {
	var zero T
	if len(l.list) == 0 {
		return zero, false
	}
	return l.list[len(l.list)-1], true
}

// Remove takes b off the list wherever it is (get_free_block takes the
// back; empty_cache takes them all); it reports whether b was there.
func (l *HostFreeList[T]) Remove(b T) bool {
	for i := len(l.list) - 1; i >= 0; i-- {
		if l.list[i] == b {
			l.list = append(l.list[:i], l.list[i+1:]...)
			return true
		}
	}
	return false
}

// Len is the number of cached blocks on the list.
func (l *HostFreeList[T]) Len() int { return len(l.list) }
