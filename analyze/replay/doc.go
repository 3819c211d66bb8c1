// Package replay replays PyTorch's CUDA caching allocator over the trace
// of one device (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator,
// with every rule from package allocator): the memory_stats() figures the
// trace implies (Result.Stats), the series of allocated, reserved and
// requested bytes after each trace entry, every allocation's life, peaks
// and OOMs, and the allocator state at any entry (State: segments and
// blocks as torch.cuda.memory_snapshot() shows them, and their usage as
// torch/cuda/_memory_viz.py segsum sums it).
//
// Around the replay: how the trace covers the run (Coverage), the rounding
// the allocator followed (allocator.InferRounding, from the trace), the end-state
// check against the file's segments, and the trust rule that decides from
// all of these whether the replayed history is exact, a lower bound or
// unknown (DecideTrust). Complete fills the gaps of a trace that lost
// entries. Sizes are bytes, times microseconds.
package replay
