// Package leaks groups the allocations live at a moment by allocation
// stack and ranks the groups by how much they look like a leak: memory
// that grows with the run, step after step, and is never given back
// (Leaks). Each group gets a verdict (leak, sawtooth, bounded, in flight,
// ...) from its growth over the steps of package steps. The stacks are
// those torch.cuda.memory._record_memory_history records, filtered as
// torch/cuda/_memory_viz.py does (package frames). Sizes are bytes.
package leaks
