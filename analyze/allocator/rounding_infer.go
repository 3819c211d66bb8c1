package allocator

import (
	"fmt"

	"github.com/snapview/snapview/internal/units"

	"github.com/snapview/snapview/snapshot"
)

// RoundingRule names the rule by which an allocator rounds a request to a
// block size. The snapshot schema of the CUDA caching allocator is kept by
// other PyTorch backends with their own rounding, so the rule is read from
// the file's own blocks (see [InferRounding]).
type RoundingRule uint8

const (
	// RoundCUDA is round_size() of c10/cuda/CUDACachingAllocator.cpp: the
	// next multiple of 512 bytes (512 at least), or with
	// roundup_power2_divisions the next power-of-two division.
	RoundCUDA RoundingRule = iota
	// RoundNPU is the NPU caching allocator of torch_npu (Ascend):
	// round_up(request + 32, 512) (torch_npu's NPUCachingAllocator.cpp
	// round_size adds 32 bytes of padding before rounding to kMinBlockSize).
	RoundNPU
	// RoundUnknown: the blocks fit no rule snapview knows.
	RoundUnknown
)

// String names the rule as info and JSON print it.
func (r RoundingRule) String() string {
	switch r {
	case RoundCUDA:
		return "cuda"
	case RoundNPU:
		return "npu"
	}
	return "unknown"
}

// Formula is the rule as a formula, for people.
func (r RoundingRule) Formula() string {
	switch r {
	case RoundCUDA:
		return "CUDA's round_size (multiples of 512 bytes)"
	case RoundNPU:
		return "torch_npu's round_up(request + 32, 512)"
	}
	return "no known rule"
}

// InferredRounding is what [InferRounding] found: the rule and its evidence.
type InferredRounding struct {
	Rule RoundingRule
	// Assumed is true when nothing in the file tells the rule apart (no
	// active block with a requested size): CUDA's rule is assumed.
	Assumed bool
	// Blocks counts the active blocks with a requested size (the
	// evidence); FitCUDA and FitNPU how many of them each rule explains.
	Blocks, FitCUDA, FitNPU int
	// Odd counts active blocks whose size is not a multiple of 512 bytes,
	// which no allocator of this schema makes (a converter's slip): they
	// are left out of the evidence.
	Odd int
	// Segments counts the segment sizes looked at (the file's segments and
	// the trace's segment_alloc and segment_map entries); BadSegment is
	// the first that is not a multiple of 2 MiB (0: none), which neither
	// allocator makes (get_allocation_size rounds to kSmallBuffer or
	// kRoundLarge).
	Segments   int
	BadSegment int64
	// Example is one block that tells the rules apart (or that neither
	// explains): its size and requested size, in bytes.
	Example [2]int64
	// Trace evidence, read when the blocks do not tell the rules apart
	// (a whole run whose end state has no active block): each alloc whose
	// block is still live when the next alloc comes, at a higher address
	// within round_up(size + 32, 512) bytes, as consecutive blocks carved
	// from one free block are. TraceCUDA counts those whose gap to the
	// next is CUDA's round_size of the request and not the NPU's,
	// TraceNPU the reverse; TraceExample is one that decided: the request
	// and the gap, in bytes.
	TraceCUDA, TraceNPU int
	TraceExample        [2]int64
	// FromTrace is true when the rule was read from the trace.
	FromTrace bool
	// Forced names the rule given by the caller (Snapshot.ForceRounding,
	// snapview's --rounding), "" when inferred: Rule is then that rule and
	// the rest is the file's evidence, for comparison.
	Forced string
}

// Evidence says in one sentence what the rule was inferred from.
func (r InferredRounding) Evidence() string {
	if r.Forced != "" {
		f := r
		f.Forced = ""
		return fmt.Sprintf("forced (--rounding %s); the file's own evidence: %s", r.Forced, f.Evidence())
	}
	if r.FromTrace {
		ex := ""
		if r.TraceExample[0] != 0 {
			ex = fmt.Sprintf("; e.g. a %d-byte request and the next block %d bytes on", r.TraceExample[0], r.TraceExample[1])
		}
		what := "no active block with a requested size"
		if r.Blocks > 0 {
			what = fmt.Sprintf("the %s fit both rules", units.Plural(r.Blocks, "active block"))
		}
		return fmt.Sprintf("%s, so from the trace: of the allocs followed in their segment by the next block, "+
			"%d are round_up(request + 32, 512) bytes long, %d CUDA's round_size%s", what, r.TraceNPU, r.TraceCUDA, ex)
	}
	if r.BadSegment != 0 {
		return fmt.Sprintf("a segment of %d bytes, not a multiple of 2 MiB, which neither the CUDA nor the NPU caching allocator makes", r.BadSegment)
	}
	if r.Assumed {
		return fmt.Sprintf("assumed: no active block with a requested size to check it against (%d segment sizes fit)", r.Segments)
	}
	ex := ""
	if r.Example[0] != 0 {
		ex = fmt.Sprintf("; e.g. a %d-byte block for a %d-byte request", r.Example[0], r.Example[1])
	}
	odd := ""
	if r.Odd > 0 {
		odd = fmt.Sprintf(" (%d more of sizes not a multiple of 512 bytes left out)", r.Odd)
	}
	return fmt.Sprintf("%s%s: %d fit CUDA's round_size, %d fit round_up(request + 32, 512)%s",
		units.Plural(r.Blocks, "active block"), odd, r.FitCUDA, r.FitNPU, ex)
}

// InferRounding reads the allocator's rounding rule from s itself: every
// active block with a requested size must be that request rounded by the
// rule, or (large pool, block not split) at most 1 MiB more, or with
// max_split_size under 20 MiB more (should_split, get_free_block in
// CUDACachingAllocator.cpp; torch_npu keeps both). CUDA's rule wins when
// both fit; when neither does, or a segment size is not a multiple of
// 2 MiB, the rule is RoundUnknown. The blocks of every device are
// evidence; of the traces, device's alone (all of them when device < 0),
// so that replaying each device of a file with many stays linear.
func InferRounding(s *snapshot.Snapshot, device int) InferredRounding {
	cfg := FromSettings(s.Settings)
	var r InferredRounding
	exCUDA, exNone := r.readBlocks(s, &cfg)
	for _, tr := range roundingTraces(s, device) {
		r.readTrace(tr, &cfg)
	}
	r.decide(exCUDA, exNone)
	switch s.ForceRounding {
	case "cuda":
		r.Rule, r.Forced = RoundCUDA, s.ForceRounding
	case "npu":
		r.Rule, r.Forced = RoundNPU, s.ForceRounding
	}
	return r
}

// segmentSize counts a segment size of n bytes, keeping the first that
// is not a multiple of 2 MiB.
func (r *InferredRounding) segmentSize(n int64) {
	r.Segments++
	if n%SmallBuffer != 0 && r.BadSegment == 0 {
		r.BadSegment = n
	}
}

// readBlocks counts the segment sizes of s and, of its active blocks with
// a requested size, those each rule explains. It returns the
// first block only the NPU rule explains and the first neither does, as
// {size, requested size} (zero: none).
func (r *InferredRounding) readBlocks(s *snapshot.Snapshot, cfg *Config) (exCUDA, exNone [2]int64) {
	var npu NPURounding
	// fits reports whether a block of size bytes may hold a request
	// rounded to rounded bytes: the same size, or where the remainder
	// could stay with the block (keeps: a large-pool block without
	// expandable segments) one too small to split, or one max_split_size
	// lets a cached oversize block keep. (A closure: it inlines here, a
	// function would not.)
	fits := func(size, rounded int64, keeps bool) bool {
		switch {
		case size == rounded:
			return true
		case size < rounded || !keeps:
			return false
		case cfg.IsOversize(rounded):
			return !cfg.RejectsCachedBlock(size, rounded)
		}
		return !cfg.ShouldSplit(false, size, rounded)
	}
	for i := range s.Segments {
		sg := &s.Segments[i]
		if !sg.Expandable {
			r.segmentSize(sg.TotalSize)
		}
		for j := range sg.Blocks {
			b := &sg.Blocks[j]
			if !b.State.Active() || b.RequestedSize <= 0 {
				continue
			}
			if b.Size%MinBlockSize != 0 {
				r.Odd++
				continue
			}
			r.Blocks++
			keeps := IsLargeSegment(sg) && !sg.Expandable && !cfg.ExpandableSegments
			c := fits(b.Size, cfg.RoundSize(b.RequestedSize), keeps)
			n := fits(b.Size, npu.Round(b.RequestedSize), keeps)
			if c {
				r.FitCUDA++
			}
			if n {
				r.FitNPU++
			}
			switch {
			case n && !c && exCUDA[0] == 0:
				exCUDA = [2]int64{b.Size, b.RequestedSize}
			case !n && !c && exNone[0] == 0:
				exNone = [2]int64{b.Size, b.RequestedSize}
			}
		}
	}
	return exCUDA, exNone
}

// roundingTraces are the traces InferRounding reads: device's alone, or
// every device's when device < 0.
func roundingTraces(s *snapshot.Snapshot, device int) [][]snapshot.TraceEntry {
	if device < 0 {
		return s.Traces
	}
	// Index the device's trace: a loop over every device's would make
	// replaying each device of a file with many quadratic.
	if device < len(s.Traces) {
		return s.Traces[device : device+1]
	}
	return nil
}

// readTrace counts tr's segment sizes, and each alloc followed, while
// its block is still live, by the next alloc at a higher address whose
// gap is one rule's rounding of the request and not the other's.
func (r *InferredRounding) readTrace(tr []snapshot.TraceEntry, cfg *Config) {
	var npu NPURounding
	// prev is the last alloc whose block is still live (addr 0: none).
	var prev snapshot.TraceEntry
	for i := range tr {
		e := &tr[i]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			r.segmentSize(e.Size)
		case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
			if e.Addr == prev.Addr {
				prev.Addr = 0
			}
		case snapshot.ActionAlloc:
			if prev.Addr != 0 && e.Addr > prev.Addr && prev.Size > 0 {
				gap := int64(e.Addr - prev.Addr)
				c, n := cfg.RoundSize(prev.Size), npu.Round(prev.Size)
				switch {
				case c == n:
				case gap == c:
					r.TraceCUDA++
				case gap == n:
					r.TraceNPU++
					if r.TraceExample[0] == 0 {
						r.TraceExample = [2]int64{prev.Size, gap}
					}
				}
			}
			prev = *e
		}
	}
}

// decide sets the rule from the evidence counted: unknown after a bad
// segment size, the trace's when the blocks do not tell the rules apart,
// else the rule every block fits (CUDA's first), with an example block
// (exCUDA or exNone, from readBlocks) where CUDA's does not.
func (r *InferredRounding) decide(exCUDA, exNone [2]int64) {
	undecided := r.Blocks == 0 || (r.FitCUDA == r.Blocks && r.FitNPU == r.Blocks)
	switch {
	case r.BadSegment != 0:
		r.Rule = RoundUnknown
	case undecided && r.TraceCUDA+r.TraceNPU > 0:
		// The trace tells the rules apart where the end state cannot;
		// one rule must explain nine in ten of the gaps that differ.
		r.FromTrace = true
		switch {
		case r.TraceCUDA*10 < r.TraceNPU:
			r.Rule = RoundNPU
		case r.TraceNPU*10 < r.TraceCUDA:
			r.Rule = RoundCUDA
		default:
			r.Rule = RoundUnknown
		}
	case r.Blocks == 0:
		r.Rule, r.Assumed = RoundCUDA, true
	case r.FitCUDA == r.Blocks:
		r.Rule = RoundCUDA
	case r.FitNPU == r.Blocks:
		r.Rule, r.Example = RoundNPU, exCUDA
	default:
		r.Rule, r.Example = RoundUnknown, exNone
		if exNone[0] == 0 {
			r.Example = exCUDA
		}
	}
}
