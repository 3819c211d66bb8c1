package dump

import (
	"encoding/binary"
	"io"
	"math"
	"unicode/utf8"

	"github.com/snapview/snapview/snapshot"
)

// Pickle writes s to w as the pickle torch.cuda.memory._dump_snapshot()
// writes: protocol 4 (the PROTO opcode, then frames of about 64 KiB as
// Python's framer cuts them), dicts filled by SETITEMS and lists by
// APPENDS in batches of 1000, as Python's pickler batches them. The dict
// keys, each stack's frames list, each frame and each string of
// Snapshot.Strings are written once and memoized (MEMOIZE, then BINGET),
// as torch's own snapshot shares them. Strings that are not valid UTF-8
// are written with U+FFFD in place of the bad bytes (Python's pickle.load
// would refuse them). It returns w's error.
func Pickle(w io.Writer, s *snapshot.Snapshot) error {
	p := &pickler{w: w, buf: make([]byte, 0, 2*frameSize)}
	p.stackMemo = make([]int32, len(s.Stacks))
	p.frameMemo = make([]int32, len(s.Frames))
	p.strMemo = make([]int32, len(s.Strings))
	for i := range p.keyMemo {
		p.keyMemo[i] = -1
	}
	for _, m := range [][]int32{p.stackMemo, p.frameMemo, p.strMemo} {
		for i := range m {
			m[i] = -1
		}
	}
	p.s = s
	// PROTO comes before the first frame (Python's Pickler.dump).
	if _, err := w.Write([]byte{opProto, 4}); err != nil {
		return err
	}
	wk := &walker{s: s, o: p}
	wk.snapshot()
	p.buf = append(p.buf, opStop)
	p.flush()
	return p.werr
}

// Pickle opcodes (Lib/pickle.py).
const (
	opMark         = '('
	opStop         = '.'
	opBinInt       = 'J'
	opBinInt1      = 'K'
	opBinInt2      = 'M'
	opNone         = 'N'
	opBinFloat     = 'G'
	opEmptyDict    = '}'
	opEmptyList    = ']'
	opAppends      = 'e'
	opSetItems     = 'u'
	opBinGet       = 'h'
	opLongBinGet   = 'j'
	opBinUnicode   = 'X'
	opProto        = 0x80
	opTuple2       = 0x86
	opNewTrue      = 0x88
	opNewFalse     = 0x89
	opLong1        = 0x8a
	opShortBinUStr = 0x8c
	opBinUnicode8  = 0x8d
	opMemoize      = 0x94
	opFrame        = 0x95
	frameSize      = 64 << 10 // Python's _Framer._FRAME_SIZE_TARGET
	batchSize      = 1000     // Python's Pickler._BATCHSIZE
)

type pickler struct {
	w    io.Writer
	werr error
	buf  []byte // the frame being filled
	s    *snapshot.Snapshot
	memo int32 // the next memo index
	// counts are the items of each open list or dict, for batching.
	counts    []int
	keyMemo   [numKeys]int32
	stackMemo []int32
	frameMemo []int32
	strMemo   []int32
}

func (p *pickler) err() error { return p.werr }

// commit closes the frame once it holds frameSize bytes.
func (p *pickler) commit() {
	if len(p.buf) >= frameSize {
		p.flush()
	}
}

// flush writes the buffered bytes as one frame.
func (p *pickler) flush() {
	if len(p.buf) == 0 || p.werr != nil {
		p.buf = p.buf[:0]
		return
	}
	var h [9]byte
	h[0] = opFrame
	binary.LittleEndian.PutUint64(h[1:], uint64(len(p.buf)))
	if _, err := p.w.Write(h[:]); err != nil {
		p.werr = err
	} else if _, err := p.w.Write(p.buf); err != nil {
		p.werr = err
	}
	p.buf = p.buf[:0]
}

func (p *pickler) memoize() {
	p.buf = append(p.buf, opMemoize)
	p.memo++
}

func (p *pickler) get(i int32) {
	if i < 256 {
		p.buf = append(p.buf, opBinGet, byte(i))
		return
	}
	p.buf = append(p.buf, opLongBinGet)
	p.buf = binary.LittleEndian.AppendUint32(p.buf, uint32(i))
}

func (p *pickler) beginDict() {
	p.buf = append(p.buf, opEmptyDict)
	p.counts = append(p.counts, 0)
}

func (p *pickler) beginList() {
	p.buf = append(p.buf, opEmptyList)
	p.counts = append(p.counts, 0)
}

// next opens a batch at the first item and every batchSize-th (closing the
// last with op).
func (p *pickler) next(op byte) {
	n := &p.counts[len(p.counts)-1]
	if *n%batchSize == 0 {
		if *n > 0 {
			p.buf = append(p.buf, op)
		}
		p.buf = append(p.buf, opMark)
	}
	*n++
}

func (p *pickler) end(op byte) {
	if p.counts[len(p.counts)-1] > 0 {
		p.buf = append(p.buf, op)
	}
	p.counts = p.counts[:len(p.counts)-1]
}

func (p *pickler) endDict() { p.end(opSetItems) }
func (p *pickler) endList() { p.end(opAppends) }
func (p *pickler) item()    { p.next(opAppends) }

func (p *pickler) key(k key) {
	p.next(opSetItems)
	if m := p.keyMemo[k]; m >= 0 {
		p.get(m)
		return
	}
	p.str(keyNames[k])
	p.keyMemo[k] = p.memo
	p.memoize()
}

func (p *pickler) strKey(s string) {
	p.next(opSetItems)
	p.str(s)
}

func (p *pickler) int(v int64) {
	switch {
	case v >= 0 && v < 256:
		p.buf = append(p.buf, opBinInt1, byte(v))
	case v >= 0 && v < 65536:
		p.buf = append(p.buf, opBinInt2, byte(v), byte(v>>8))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		p.buf = append(p.buf, opBinInt)
		p.buf = binary.LittleEndian.AppendUint32(p.buf, uint32(int32(v)))
	default:
		// LONG1: the fewest little-endian two's-complement bytes.
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		n := 8
		for n > 1 {
			top, next := b[n-1], b[n-2]
			if (top == 0 && next < 0x80) || (top == 0xff && next >= 0x80) {
				n--
				continue
			}
			break
		}
		p.buf = append(p.buf, opLong1, byte(n))
		p.buf = append(p.buf, b[:n]...)
	}
}

func (p *pickler) uint(v uint64) {
	if v <= math.MaxInt64 {
		p.int(int64(v))
		return
	}
	p.buf = append(p.buf, opLong1, 9)
	p.buf = binary.LittleEndian.AppendUint64(p.buf, v)
	p.buf = append(p.buf, 0)
}

func (p *pickler) float(f float64) {
	p.buf = append(p.buf, opBinFloat)
	p.buf = binary.BigEndian.AppendUint64(p.buf, math.Float64bits(f))
}

func (p *pickler) bool(b bool) {
	if b {
		p.buf = append(p.buf, opNewTrue)
	} else {
		p.buf = append(p.buf, opNewFalse)
	}
}

func (p *pickler) none() { p.buf = append(p.buf, opNone) }

func (p *pickler) str(s string) {
	if !utf8.ValidString(s) {
		s = toValidUTF8(s)
	}
	switch n := len(s); {
	case n < 256:
		p.buf = append(p.buf, opShortBinUStr, byte(n))
	case n <= math.MaxUint32:
		p.buf = append(p.buf, opBinUnicode)
		p.buf = binary.LittleEndian.AppendUint32(p.buf, uint32(n))
	default:
		p.buf = append(p.buf, opBinUnicode8)
		p.buf = binary.LittleEndian.AppendUint64(p.buf, uint64(n))
	}
	p.buf = append(p.buf, s...)
	if len(p.buf) >= 4*frameSize {
		// A long string: Python writes it outside the frame; a frame of
		// its own reads the same.
		p.flush()
	}
}

func (p *pickler) poolID(id snapshot.PoolID) {
	p.int(id[0])
	p.int(id[1])
	p.buf = append(p.buf, opTuple2)
}

func (p *pickler) stack(id snapshot.StackID) {
	if id < 0 || int(id) >= len(p.stackMemo) {
		id = snapshot.NoStack
	}
	if m := p.stackMemo[id]; m >= 0 {
		p.get(m)
		return
	}
	p.beginList()
	for _, f := range p.s.Stack(id) {
		p.item()
		p.frame(f)
	}
	p.endList()
	p.stackMemo[id] = p.memo
	p.memoize()
}

// frame writes one frame dict, {"name", "filename", "line"} as torch
// orders them (torch/csrc/profiler/combined_traceback.cpp).
func (p *pickler) frame(f snapshot.FrameID) {
	if m := p.frameMemo[f]; m >= 0 {
		p.get(m)
		return
	}
	fr := &p.s.Frames[f]
	p.beginDict()
	p.key(kName)
	p.str(fr.Name)
	p.key(kFilename)
	p.str(fr.Filename)
	p.key(kLine)
	p.int(fr.Line)
	p.endDict()
	p.frameMemo[f] = p.memo
	p.memoize()
}

func (p *pickler) tableStr(id snapshot.StrID) {
	if int(id) >= len(p.strMemo) {
		id = 0
	}
	if m := p.strMemo[id]; m >= 0 {
		p.get(m)
		return
	}
	str := ""
	if int(id) < len(p.s.Strings) {
		str = p.s.Strings[id]
	}
	p.str(str)
	p.strMemo[id] = p.memo
	p.memoize()
}

// toValidUTF8 replaces each run of bytes that are not UTF-8 by U+FFFD.
func toValidUTF8(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		out = append(out, r)
	}
	return string(out)
}

// Writer returns the writer of format: JSON for "json", else Pickle.
func Writer(format string) func(io.Writer, *snapshot.Snapshot) error {
	if format == "json" {
		return JSON
	}
	return Pickle
}
