// Package compare reduces one device of one snapshot at one moment to a
// Side (memory_stats() figures, live bytes by allocation stack, settings,
// recording) and compares two Sides (Diff: `snapview diff`) or many
// (Ranks: `snapview ranks`, one file per rank of a distributed run, with
// the spread of each figure and the ranks that stand out). Sizes are
// bytes.
package compare
