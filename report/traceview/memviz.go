package traceview

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/snapview/snapview/snapshot"
)

// ErrNoDeviceTraces is WriteMemvizTrace's error for a file without a
// device_traces key (a bare torch.cuda.memory_snapshot() list), where
// `_memory_viz trace` fails with KeyError: 'device_traces'.
var ErrNoDeviceTraces = errors.New("the file has no device_traces (a bare segment list): _memory_viz trace fails on it with KeyError: 'device_traces'")

// WriteMemvizTrace writes what `python -m torch.cuda._memory_viz trace
// FILE` prints (torch/cuda/_memory_viz.py trace(), then print()), byte
// for byte, quirks included:
//
//   - names a, b, …, z, a1, … are given in order to allocations and
//     segments and never reused (free_names is filled only when a name is
//     a key of the address maps, which it never is);
//   - an alloc is named against the first segment_alloc of the trace whose
//     range holds its address (freed ones included), else the first
//     segment of the file (any device, "seg_I") whose [address,
//     address+allocated_size) holds it, else "MEM" with the absolute
//     address;
//   - "TOTAL MEM" is the last entry's index plus its size for an alloc,
//     minus it for a free_completed, and has no newline, so a second
//     device's header follows on the same line;
//   - entries of other actions (segment_map, segment_unmap, snapshot) are
//     printed as Python's repr of the entry dict.
//
// Sizes are _memory_viz's Bytes ("16.0MiB"). Errors are w's, or
// ErrNoDeviceTraces.
func WriteMemvizTrace(w io.Writer, s *snapshot.Snapshot) error {
	if !s.HasDeviceTraces {
		return ErrNoDeviceTraces
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	fileSegs := newIntervals()
	for i := range s.Segments {
		sg := &s.Segments[i]
		fileSegs.add(sg.Address, sg.AllocatedSize, "seg_"+strconv.Itoa(i))
	}
	hasCC := s.FieldCount("device_traces[][].compile_context") > 0
	hasUM := s.FieldCount("device_traces[][].user_metadata") > 0
	var buf []byte
	for dev, trace := range s.Traces {
		if len(trace) == 0 {
			continue
		}
		buf = append(buf[:0], "Device "...)
		buf = strconv.AppendInt(buf, int64(dev), 10)
		buf = append(buf, " ----------------\n"...)
		buf = strconv.AppendInt(buf, int64(len(trace)), 10)
		buf = append(buf, " entries\n"...)
		bw.Write(buf)

		segs := newIntervals()
		segNames := map[snapshot.Addr]string{}
		allocNames := map[snapshot.Addr]string{}
		next := 0
		name := func() string {
			r, m := next/26, next%26
			next++
			n := string(rune('a' + m))
			if r != 0 {
				n += strconv.Itoa(r)
			}
			return n
		}
		var count int64
		for i := range trace {
			e := &trace[i]
			count = int64(i)
			buf = buf[:0]
			switch e.Action {
			case snapshot.ActionAlloc:
				n := name()
				segName, segAddr, ok := segs.find(e.Addr)
				if !ok {
					segName, segAddr, ok = fileSegs.find(e.Addr)
				}
				offset := uint64(e.Addr)
				if !ok {
					segName = "MEM"
				} else {
					offset -= uint64(segAddr)
				}
				buf = append(buf, n...)
				buf = append(buf, " = "...)
				buf = append(buf, segName...)
				buf = append(buf, '[')
				buf = strconv.AppendUint(buf, offset, 10)
				buf = append(buf, ':')
				buf = appendPyBytes(buf, e.Size)
				buf = append(buf, "]\n"...)
				allocNames[e.Addr] = n
				count += e.Size
			case snapshot.ActionFreeRequested:
				buf = append(buf, "del "...)
				buf = appendName(buf, allocNames, e.Addr)
				buf = append(buf, " # "...)
				buf = appendPyBytes(buf, e.Size)
				buf = append(buf, '\n')
			case snapshot.ActionFreeCompleted:
				count -= e.Size
				buf = append(buf, "# free completed for "...)
				buf = appendName(buf, allocNames, e.Addr)
				buf = append(buf, ' ')
				buf = appendPyBytes(buf, e.Size)
				buf = append(buf, '\n')
			case snapshot.ActionSegmentAlloc:
				n := name()
				buf = append(buf, n...)
				buf = append(buf, " = cudaMalloc("...)
				buf = strconv.AppendUint(buf, uint64(e.Addr), 10)
				buf = append(buf, ", "...)
				buf = appendPyBytes(buf, e.Size)
				buf = append(buf, ")\n"...)
				segs.add(e.Addr, e.Size, n)
				segNames[e.Addr] = n
			case snapshot.ActionSegmentFree:
				buf = append(buf, "cudaFree("...)
				buf = appendName(buf, segNames, e.Addr)
				buf = append(buf, ") # "...)
				buf = appendPyBytes(buf, e.Size)
				buf = append(buf, '\n')
			case snapshot.ActionOOM:
				buf = append(buf, "raise OutOfMemoryError # "...)
				buf = appendPyBytes(buf, e.Size)
				buf = append(buf, " requested, "...)
				buf = appendPyBytes(buf, e.DeviceFree())
				buf = append(buf, " free in CUDA\n"...)
			default:
				buf = appendEntryRepr(buf, s, e, hasCC, hasUM)
				buf = append(buf, '\n')
			}
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
		buf = append(buf[:0], "TOTAL MEM: "...)
		buf = appendPyBytes(buf, count)
		bw.Write(buf)
	}
	bw.WriteByte('\n') // print()'s newline
	return bw.Flush()
}

// appendName appends the name an address was given, or the address itself
// (allocation_addr_to_name.get(addr, (addr, …))).
func appendName(buf []byte, names map[snapshot.Addr]string, a snapshot.Addr) []byte {
	if n, ok := names[a]; ok {
		return append(buf, n...)
	}
	return strconv.AppendUint(buf, uint64(a), 10)
}

// appendPyBytes appends _memory_viz's Bytes repr (_format_size): the
// value divided by 1024 until under 1024 in magnitude, printed as
// "%3.1f" with the unit: "4.0B", "16.0MiB", "-3.8KiB".
func appendPyBytes(buf []byte, n int64) []byte {
	units := [...]string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi"}
	num := float64(n)
	for _, u := range units {
		if num > -1024 && num < 1024 {
			buf = appendPyFloat1(buf, num)
			buf = append(buf, u...)
			return append(buf, 'B')
		}
		num /= 1024
	}
	buf = appendPyFloat1(buf, num)
	return append(buf, "YiB"...)
}

// appendPyFloat1 formats like Python's "%3.1f" (correctly rounded, as
// strconv is; at least 3 wide).
func appendPyFloat1(buf []byte, f float64) []byte {
	s := strconv.FormatFloat(f, 'f', 1, 64)
	if s == "-0.0" {
		s = "-0.0"
	}
	for len(s) < 3 {
		s = " " + s
	}
	return append(buf, s...)
}

// appendEntryRepr appends Python's repr of a trace entry dict, keys in the
// order PyTorch writes them (torch/csrc/cuda/memory_snapshot.cpp:
// action, addr, size, stream, time_us, compile_context, user_metadata,
// frames). Frames are {'name', 'filename', 'line'}; keys of newer PyTorch
// this decoder does not keep (fx_node_*) are not reproduced.
func appendEntryRepr(buf []byte, s *snapshot.Snapshot, e *snapshot.TraceEntry, hasCC, hasUM bool) []byte {
	buf = append(buf, "{'action': "...)
	buf = appendPyStr(buf, s.ActionName(e.Action))
	if e.Flags&snapshot.FlagAddr != 0 {
		buf = append(buf, ", 'addr': "...)
		buf = strconv.AppendUint(buf, uint64(e.Addr), 10)
	}
	buf = append(buf, ", 'size': "...)
	buf = strconv.AppendInt(buf, e.Size, 10)
	buf = append(buf, ", 'stream': "...)
	buf = strconv.AppendUint(buf, e.Stream, 10)
	if e.Flags&snapshot.FlagTime != 0 {
		buf = append(buf, ", 'time_us': "...)
		buf = strconv.AppendInt(buf, e.TimeUS, 10)
	}
	if hasCC {
		buf = append(buf, ", 'compile_context': "...)
		buf = appendPyStr(buf, s.Strings[e.CompileContext])
	}
	if hasUM {
		buf = append(buf, ", 'user_metadata': "...)
		buf = appendPyStr(buf, s.Strings[e.UserMetadata])
	}
	if e.Flags&snapshot.FlagFrames != 0 {
		buf = append(buf, ", 'frames': ["...)
		for k, fid := range s.Stack(e.Stack) {
			f := s.Frames[fid]
			if k > 0 {
				buf = append(buf, ", "...)
			}
			buf = append(buf, "{'name': "...)
			buf = appendPyStr(buf, f.Name)
			buf = append(buf, ", 'filename': "...)
			buf = appendPyStr(buf, f.Filename)
			buf = append(buf, ", 'line': "...)
			buf = strconv.AppendInt(buf, f.Line, 10)
			buf = append(buf, '}')
		}
		buf = append(buf, ']')
	}
	return append(buf, '}')
}

// appendPyStr appends Python's repr of a str (unicode_repr in CPython's
// Objects/unicodeobject.c): single quotes unless the string holds a single
// quote and no double quote; backslash, the quote, \n, \r and \t escaped,
// and every other character str.isprintable() rejects (controls, format
// characters such as U+202E, separators other than the space) written as
// \xhh, \uhhhh or \Uhhhhhhhh, so a terminal shows it instead of acting on
// it. unicode.IsPrint is Go's name for the same set.
func appendPyStr(buf []byte, s string) []byte {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	buf = append(buf, q)
	for _, r := range s {
		switch {
		case r == '\\':
			buf = append(buf, `\\`...)
		case r == rune(q):
			buf = append(buf, '\\', q)
		case r == '\n':
			buf = append(buf, `\n`...)
		case r == '\r':
			buf = append(buf, `\r`...)
		case r == '\t':
			buf = append(buf, `\t`...)
		case r < 0x100 && !unicode.IsPrint(r):
			buf = appendHexEscape(buf, `\x`, r, 2)
		case r < 0x10000 && !unicode.IsPrint(r):
			buf = appendHexEscape(buf, `\u`, r, 4)
		case !unicode.IsPrint(r):
			buf = appendHexEscape(buf, `\U`, r, 8)
		default:
			buf = append(buf, string(r)...)
		}
	}
	return append(buf, q)
}

// appendHexEscape appends prefix and r in digits lower-case hex digits.
func appendHexEscape(buf []byte, prefix string, r rune, digits int) []byte {
	buf = append(buf, prefix...)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		buf = append(buf, "0123456789abcdef"[(r>>shift)&15])
	}
	return buf
}

// intervals finds the first-added range holding an address: _memory_viz's
// find_segment, which scans its list in order, in O(log n + overlaps).
type intervals struct {
	byStart []interval // sorted by start, then order
	maxSize int64
	n       int
}

type interval struct {
	start snapshot.Addr
	size  int64
	order int
	name  string
}

func newIntervals() *intervals { return &intervals{} }

func (iv *intervals) add(start snapshot.Addr, size int64, name string) {
	if size <= 0 {
		iv.n++
		return
	}
	x := interval{start, size, iv.n, name}
	iv.n++
	i, _ := slices.BinarySearchFunc(iv.byStart, x, func(a, b interval) int {
		if a.start != b.start {
			if a.start < b.start {
				return -1
			}
			return 1
		}
		return a.order - b.order
	})
	iv.byStart = slices.Insert(iv.byStart, i, x)
	iv.maxSize = max(iv.maxSize, size)
}

// find returns the name and start of the first-added interval holding a.
func (iv *intervals) find(a snapshot.Addr) (string, snapshot.Addr, bool) {
	j, _ := slices.BinarySearchFunc(iv.byStart, a, func(x interval, t snapshot.Addr) int {
		if x.start <= t {
			return -1
		}
		return 1
	})
	best := -1
	for k := j - 1; k >= 0; k-- {
		x := &iv.byStart[k]
		if uint64(a)-uint64(x.start) >= uint64(iv.maxSize) {
			break
		}
		if uint64(a)-uint64(x.start) < uint64(x.size) && (best < 0 || x.order < iv.byStart[best].order) {
			best = k
		}
	}
	if best < 0 {
		return "", 0, false
	}
	return iv.byStart[best].name, iv.byStart[best].start, true
}
