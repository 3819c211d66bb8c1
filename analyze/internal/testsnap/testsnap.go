// Package testsnap holds what the tests of the analyze packages share:
// builders for hand-made snapshots, the corpus next to the repository
// (../shared), and the real snapshots in it with the memory_stats() PyTorch
// recorded beside them. It is imported by tests only.
package testsnap

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// Builders for hand-made snapshots.

const (
	// MiB is 1 << 20 bytes.
	MiB = int64(1 << 20)
	// SegBase is the address of the first hand-made segment.
	SegBase = snapshot.Addr(0x7f0000000000)
)

// Trace entry actions and block states, short for tables of hand-made
// snapshots.
var (
	Alloc  = snapshot.ActionAlloc
	FreeRq = snapshot.ActionFreeRequested
	FreeOK = snapshot.ActionFreeCompleted
	SegAl  = snapshot.ActionSegmentAlloc
	SegFr  = snapshot.ActionSegmentFree
	SegMap = snapshot.ActionSegmentMap
	SegUnm = snapshot.ActionSegmentUnmap
	OOM    = snapshot.ActionOOM
	AAlloc = snapshot.StateActiveAllocated
	APend  = snapshot.StateActivePendingFree
	Inact  = snapshot.StateInactive
)

// Ev is a trace entry of size bytes at addr.
func Ev(a snapshot.Action, addr snapshot.Addr, size int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: a, Addr: addr, Size: size}
}

// Blk is a block of size bytes (req requested) at addr.
func Blk(addr snapshot.Addr, size, req int64, st snapshot.BlockState) snapshot.Block {
	return snapshot.Block{Address: addr, Size: size, RequestedSize: req, State: st}
}

// Seg is a segment of size bytes at addr ("small" or "large" typ).
func Seg(addr snapshot.Addr, size int64, typ string, blocks ...snapshot.Block) snapshot.Segment {
	return snapshot.Segment{Address: addr, TotalSize: size, Type: typ, Blocks: blocks}
}

// Snap is a snapshot of device 0 with segs and trace, without
// max_split_size.
func Snap(segs []snapshot.Segment, trace ...snapshot.TraceEntry) *snapshot.Snapshot {
	return &snapshot.Snapshot{
		Segments: segs, Traces: [][]snapshot.TraceEntry{trace}, HasDeviceTraces: true,
		Settings: &snapshot.AllocatorSettings{MaxSplitSize: -1},
		Stacks:   [][]snapshot.FrameID{nil},
	}
}

// Corpus returns the shared corpus's snapshots folder (corpus.Dir: skips
// t when there is none, fails it when SNAPVIEW_CORPUS requires one).
func Corpus(t testing.TB) string {
	t.Helper()
	return corpus.Dir(t)
}

// SharedSnapshot is one real snapshot file of the corpus with the
// memory_stats() recorded next to it, when there is one.
type SharedSnapshot struct {
	Name, Path string
	// StatsFile is the memory_stats() dump recorded with the snapshot
	// ("" when none).
	StatsFile string
	// FromStart is meta.json's ground_truth.recorded_from_start.
	FromStart bool
}

// SharedSnapshots returns the corpus's torch2.11 recordings, probes and
// public files, or skips t without a corpus.
func SharedSnapshots(t testing.TB) []SharedSnapshot {
	t.Helper()
	dir := Corpus(t)
	var out []SharedSnapshot
	for _, d := range corpus.Match(t, dir, "torch2.11/*", 17) {
		p := filepath.Join(d, "snapshot.pickle")
		if _, err := os.Stat(p); err != nil {
			continue
		}
		ss := SharedSnapshot{Name: "torch2.11/" + filepath.Base(d), Path: p}
		for _, meta := range []string{"meta.json", "snapshot.meta.json"} {
			if data, err := os.ReadFile(filepath.Join(d, meta)); err == nil {
				var m struct {
					GroundTruth struct {
						RecordedFromStart bool `json:"recorded_from_start"`
					} `json:"ground_truth"`
				}
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatalf("%s: %v", meta, err)
				}
				ss.FromStart = m.GroundTruth.RecordedFromStart
			}
		}
		for _, st := range []string{"stats.json", "snapshot.stats.json"} {
			if f := filepath.Join(d, st); fileExists(f) {
				ss.StatsFile = f
			}
		}
		out = append(out, ss)
	}
	for _, p := range corpus.Match(t, dir, "torch2.11-probe/*.pickle", 13) {
		ss := SharedSnapshot{Name: "probe/" + filepath.Base(p), Path: p}
		if f := strings.TrimSuffix(p, ".pickle") + ".extra.json"; fileExists(f) {
			ss.StatsFile = f
		}
		out = append(out, ss)
	}
	for _, p := range corpus.Match(t, dir, "public/*", 34) {
		out = append(out, SharedSnapshot{Name: "public/" + filepath.Base(p), Path: p})
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// StatsCase is a recording of the corpus with the memory_stats() dump
// PyTorch wrote at the same moment.
type StatsCase struct {
	Name, Pickle, Stats string
}

// StatsCases returns the corpus's recordings with a memory_stats() dump
// (the 2M-entry file too, unless -short), or skips t without a corpus.
func StatsCases(t testing.TB) []StatsCase {
	root := Corpus(t)
	var cases []StatsCase
	for _, f := range corpus.Match(t, root, "torch2.11/*/stats.json", 16) {
		dir := filepath.Dir(f)
		cases = append(cases, StatsCase{filepath.Base(dir), filepath.Join(dir, "snapshot.pickle"), f})
	}
	for _, f := range corpus.Match(t, root, "torch2.11/*/snapshot.stats.json", 1) {
		dir := filepath.Dir(f)
		cases = append(cases, StatsCase{filepath.Base(dir), filepath.Join(dir, "snapshot.pickle"), f})
	}
	for _, f := range corpus.Match(t, root, "torch2.11-probe/*.extra.json", 13) {
		name := strings.TrimSuffix(f, ".extra.json")
		cases = append(cases, StatsCase{"probe/" + filepath.Base(name), name + ".pickle", f})
	}
	if !testing.Short() {
		big := filepath.Join(root, "big", "gpt2_2M_events")
		cases = append(cases, StatsCase{"big/gpt2_2M_events", filepath.Join(big, "snapshot.pickle.xz"), filepath.Join(big, "stats.json")})
	}
	return cases
}

// SyntheticChurn builds a snapshot of n alloc/free pairs over a few
// segments, recorded from the start (for benchmarks of the replay).
func SyntheticChurn(n int) *snapshot.Snapshot {
	var trace []snapshot.TraceEntry
	const nseg = 8
	for k := range nseg {
		trace = append(trace, Ev(SegAl, SegBase+snapshot.Addr(k)*snapshot.Addr(64*MiB), 64*MiB))
	}
	type live struct {
		addr snapshot.Addr
		size int64
	}
	var lives []live
	next := make([]snapshot.Addr, nseg)
	for i := 0; i < n; i++ {
		k := i % nseg
		base := SegBase + snapshot.Addr(k)*snapshot.Addr(64*MiB)
		size := 2*MiB + int64(i%7)*MiB
		if int64(next[k])+size > 64*MiB || len(lives) > 16 {
			for _, l := range lives {
				trace = append(trace, Ev(FreeRq, l.addr, l.size), Ev(FreeOK, l.addr, l.size))
			}
			lives = lives[:0]
			clear(next)
		}
		a := base + next[k]
		trace = append(trace, Ev(Alloc, a, size))
		lives = append(lives, live{a, size})
		next[k] += snapshot.Addr(size)
	}
	var segs []snapshot.Segment
	for k := range nseg {
		base := SegBase + snapshot.Addr(k)*snapshot.Addr(64*MiB)
		var blocks []snapshot.Block
		off := snapshot.Addr(0)
		for _, l := range lives {
			if l.addr >= base && l.addr < base+snapshot.Addr(64*MiB) {
				blocks = append(blocks, Blk(l.addr, l.size, l.size, AAlloc))
				off = l.addr - base + snapshot.Addr(l.size)
			}
		}
		if int64(off) < 64*MiB {
			blocks = append(blocks, Blk(base+off, 64*MiB-int64(off), 0, Inact))
		}
		segs = append(segs, Seg(base, 64*MiB, "large", blocks...))
	}
	return Snap(segs, trace...)
}
