// Package info says what a snapshot file holds and how it was recorded:
// per-device counts, trace coverage (from the start, wrapped, started
// late), the arguments torch.cuda.memory._record_memory_history was called
// with (Recording: enabled, stacks, context, max_entries), the range of
// PyTorch releases the file's keys and frames allow (VersionHint), pinned
// host memory, the replay's end-state check and trust per device, and the
// warnings that follow from all of it (Inspect).
package info
