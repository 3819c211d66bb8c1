// Package export writes a snapshot in the formats other tools read: pprof
// profiles (go tool pprof, Pyroscope, Perfetto), folded stacks
// (flamegraph.pl, speedscope, the lines torch/cuda/_memory_viz.py feeds
// flamegraph.pl), Chrome trace JSON (Perfetto, chrome://tracing) and
// Parquet tables (DuckDB, Spark, Trino). It never prints to a terminal and
// never exits: each writer takes an io.Writer or a directory and returns
// an error.
package export

import (
	"bufio"
	"fmt"
	"github.com/snapview/snapview/report/kit"
	"io"
	"strconv"
	"strings"

	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// FoldedView selects what the folded stacks group by.
type FoldedView int

const (
	// FoldedMemory is `_memory_viz memory`: stream, block state, stack.
	FoldedMemory FoldedView = iota
	// FoldedSegments is `_memory_viz segments`: stream, segment address,
	// block state, stack.
	FoldedSegments
)

// FoldedOptions says how [WriteFolded] writes.
type FoldedOptions struct {
	View FoldedView
	// UserFrames keeps only the user's frames (frames.ClassifyFrame:
	// neither torch, the standard library nor C++), so that a flame graph
	// shows the program's own call sites; a stack with none reads
	// "<no-user-frames>".
	UserFrames bool
	// Root, when not "", is a leading frame put before every line (the
	// file's name, when several files go into one flame graph, so that
	// their bytes stay apart). ';' and line breaks in it, which would cut
	// it into frames or lines, become '_'.
	Root string
}

// FoldedSegment is one segment as the folded writer sees it: the file's
// segments, or a replayed state's.
type FoldedSegment struct {
	Stream uint64
	Addr   snapshot.Addr
	Blocks []FoldedBlock
	// RequestedUnknown is set when the device's requested sizes are
	// unknown (stats.Known.Requested): WriteFolded then weighs each
	// block by its size under a "<requested unknown>" frame.
	RequestedUnknown bool
}

// FoldedBlock is one block: its size and the bytes its stack accounts for
// (requested_size, as _memory_viz counts them; the rest is "<gaps>").
type FoldedBlock struct {
	State     snapshot.BlockState
	Size      int64
	Requested int64
	Stack     snapshot.StackID
}

// FileSegments returns the segments of s as the file holds them, in file
// order (every device), as _memory_viz reads snapshot["segments"].
func FileSegments(s *snapshot.Snapshot) []FoldedSegment {
	out := make([]FoldedSegment, len(s.Segments))
	unknown := map[int]bool{}
	for _, d := range s.Devices() {
		if k, _ := stats.RequestedTrust(s, d); k == stats.Unknown {
			unknown[d] = true
		}
	}
	for i := range s.Segments {
		sg := &s.Segments[i]
		fs := FoldedSegment{Stream: sg.Stream, Addr: sg.Address, Blocks: make([]FoldedBlock, len(sg.Blocks)), RequestedUnknown: unknown[sg.Device]}
		for j, b := range sg.Blocks {
			fs.Blocks[j] = FoldedBlock{State: b.State, Size: b.Size, Requested: b.RequestedSize, Stack: b.Stack}
		}
		out[i] = fs
	}
	return out
}

// StateSegments returns the segments of a replayed state, in address
// order. Inactive blocks account for no bytes (the whole block is
// "<gaps>"), where the file keeps their stale requested_size.
func StateSegments(st *replay.State) []FoldedSegment {
	out := make([]FoldedSegment, len(st.Segments))
	for i := range st.Segments {
		sg := &st.Segments[i]
		fs := FoldedSegment{Stream: sg.Stream, Addr: sg.Addr, Blocks: make([]FoldedBlock, len(sg.Blocks)),
			RequestedUnknown: st.Stats.Known.Requested == stats.Unknown}
		for j, b := range sg.Blocks {
			fs.Blocks[j] = FoldedBlock{State: b.State, Size: b.Size, Requested: b.Requested, Stack: b.Stack}
		}
		out[i] = fs
	}
	return out
}

// WriteFolded writes one folded-stack line per block of segs, as
// torch/cuda/_memory_viz.py's memory() and segments() do (_write_blocks):
//
//	[ROOT;]stream_S[;seg_A];STATE;FRAMES BYTES
//
// with FRAMES the block's stack outermost first, each frame
// "basename:line:name" (_frame_fmt), frames dropped by _frame_filter left
// out (frames.MemvizKeepsFrame), "<non-python>" for a stack without
// frames; BYTES the block's requested size, followed, when the block is
// larger, by a "STATE;<gaps> REST" line. S and A are decimal. Errors are
// w's. In a segment whose requested sizes are unknown
// (FoldedSegment.RequestedUnknown) a block is one line,
// "STATE;<requested unknown>;FRAMES SIZE": its whole size, marked.
func WriteFolded(w io.Writer, s *snapshot.Snapshot, segs []FoldedSegment, o FoldedOptions) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	frag := map[snapshot.StackID]string{}
	fragment := func(id snapshot.StackID) string {
		if f, ok := frag[id]; ok {
			return f
		}
		f := foldedFrames(s, id, o.UserFrames)
		frag[id] = f
		return f
	}
	root := kit.Escape(strings.NewReplacer(";", "_", "\n", "_", "\r", "_").Replace(o.Root))
	var line []byte
	for i := range segs {
		sg := &segs[i]
		prefix := "stream_" + strconv.FormatUint(sg.Stream, 10)
		if root != "" {
			prefix = root + ";" + prefix
		}
		if o.View == FoldedSegments {
			prefix += ";seg_" + strconv.FormatUint(uint64(sg.Addr), 10)
		}
		for _, b := range sg.Blocks {
			state := b.State.String()
			line = append(line[:0], prefix...)
			line = append(line, ';')
			line = append(line, state...)
			line = append(line, ';')
			if sg.RequestedUnknown {
				line = append(line, "<requested unknown>;"...)
			}
			line = append(line, fragment(b.Stack)...)
			line = append(line, ' ')
			if sg.RequestedUnknown {
				line = strconv.AppendInt(line, b.Size, 10)
			} else {
				line = strconv.AppendInt(line, b.Requested, 10)
			}
			line = append(line, '\n')
			if gaps := b.Size - b.Requested; gaps != 0 && !sg.RequestedUnknown {
				line = append(line, prefix...)
				line = append(line, ';')
				line = append(line, state...)
				line = append(line, ";<gaps> "...)
				line = strconv.AppendInt(line, gaps, 10)
				line = append(line, '\n')
			}
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// foldedFrame is a frame as a folded line holds it: its memviz text with
// what a terminal acts on escaped (kit.Escape, which also writes a line
// break as \n, so that a name cannot end its sample and forge samples of
// its own) and ';', which would split the frame in two, as \x3b;
// _memory_viz writes both as they are.
func foldedFrame(f snapshot.Frame) string {
	return strings.ReplaceAll(kit.Escape(MemvizFrame(f)), ";", `\x3b`)
}

// foldedFrames is _write_blocks' frames_fragment: the frames of a stack
// outermost first, joined by ';'.
func foldedFrames(s *snapshot.Snapshot, id snapshot.StackID, userOnly bool) string {
	stack := s.Stack(id)
	if len(stack) == 0 {
		return "<non-python>"
	}
	var parts []string
	for k := len(stack) - 1; k >= 0; k-- {
		f := s.Frames[stack[k]]
		if !frames.MemvizKeepsFrame(f) {
			continue
		}
		if userOnly && frames.ClassifyFrame(f) != frames.FrameUser {
			continue
		}
		parts = append(parts, foldedFrame(f))
	}
	if userOnly && len(parts) == 0 {
		return "<no-user-frames>"
	}
	return strings.Join(parts, ";")
}

// MemvizFrame formats a frame as _memory_viz's _frame_fmt does:
// "basename:line:name", the filename cut after its last '/'.
func MemvizFrame(f snapshot.Frame) string {
	fn := f.Filename
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		fn = fn[i+1:]
	}
	return fmt.Sprintf("%s:%d:%s", fn, f.Line, f.Name)
}
