package replay

import (
	"fmt"

	"github.com/snapview/snapview/analyze/allocator"
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

// Rounding is what [InferRounding] found: the rule and its evidence.
type Rounding struct {
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
}

// Evidence says in one sentence what the rule was inferred from.
func (r Rounding) Evidence() string {
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
func InferRounding(s *snapshot.Snapshot, device int) Rounding {
	cfg := allocator.FromSettings(s.Settings)
	var npu allocator.NPURounding
	var r Rounding
	fits := func(size, rounded int64, large, expandable bool) bool {
		switch {
		case size == rounded:
			return true
		case size < rounded || !large || expandable:
			return false
		case cfg.IsOversize(rounded):
			return !cfg.RejectsCachedBlock(size, rounded)
		}
		return !cfg.ShouldSplit(false, size, rounded)
	}
	segSize := func(n int64) {
		r.Segments++
		if n%allocator.SmallBuffer != 0 && r.BadSegment == 0 {
			r.BadSegment = n
		}
	}
	var exCUDA, exNone [2]int64
	for i := range s.Segments {
		sg := &s.Segments[i]
		if !sg.Expandable {
			segSize(sg.TotalSize)
		}
		for j := range sg.Blocks {
			b := &sg.Blocks[j]
			if !b.State.Active() || b.RequestedSize <= 0 {
				continue
			}
			if b.Size%allocator.MinBlockSize != 0 {
				r.Odd++
				continue
			}
			r.Blocks++
			c := fits(b.Size, cfg.RoundSize(b.RequestedSize), allocator.IsLargeSegment(sg), sg.Expandable || cfg.ExpandableSegments)
			n := fits(b.Size, npu.Round(b.RequestedSize), allocator.IsLargeSegment(sg), sg.Expandable || cfg.ExpandableSegments)
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
	traces := s.Traces
	if device >= 0 {
		// Index the device's trace: a loop over every device's would make
		// replaying each device of a file with many quadratic.
		traces = nil
		if device < len(s.Traces) {
			traces = s.Traces[device : device+1]
		}
	}
	for _, tr := range traces {
		for i := range tr {
			if a := tr[i].Action; a == snapshot.ActionSegmentAlloc || a == snapshot.ActionSegmentMap {
				segSize(tr[i].Size)
			}
		}
	}
	switch {
	case r.BadSegment != 0:
		r.Rule = RoundUnknown
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
	return r
}
