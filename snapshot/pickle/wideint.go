package pickle

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// WideInt is an integer wider than int64, from a pickle LONG1/LONG4 or a
// JSON number (ParseWideInt). The data this machine reads is 64-bit (a
// memory snapshot's fields are, c10/cuda/CUDACachingAllocator.h), so
// nothing wider is kept: only the
// value modulo 2^64 (what a cast to uint64 gives), its sign, whether it
// fits uint64, and a short text for warnings. Building it costs one pass
// over the digits or bytes and no big arithmetic, so an integer of
// millions of digits costs what reading it costs.
type WideInt struct {
	Lo   uint64 // the value modulo 2^64 (two's complement)
	Neg  bool
	U64  bool   // 0 <= value < 2^64
	text string // at most a few dozen characters
}

// maxIntDigits is how many leading digits a warning quotes of a wide
// integer.
const maxIntDigits = 24

// String is the text a warning quotes: the value when it fits uint64,
// else its first digits and its length.
func (w *WideInt) String() string { return w.text }

// DecodeLong decodes a little-endian two's-complement integer of any width
// (pickle's LONG1/LONG4, Python's encode_long in Lib/pickle.py). Values
// that fit int64 stay ints; others become a *wideInt (e.g. 2^64-1, which
// PyTorch writes for a -1 cast to unsigned). It costs O(len(b)).
func DecodeLong(b []byte) Value {
	if len(b) == 0 {
		return Value{}
	}
	if len(b) <= 8 {
		var u uint64
		for i := len(b) - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		if b[len(b)-1]&0x80 != 0 && len(b) < 8 {
			u |= ^uint64(0) << (8 * uint(len(b)))
		}
		return Value{N: int64(u)}
	}
	neg := b[len(b)-1]&0x80 != 0
	ext := byte(0)
	if neg {
		ext = 0xff
	}
	lo := binary.LittleEndian.Uint64(b)
	// top is the index past the last byte that is not sign extension.
	top := len(b)
	for top > 8 && b[top-1] == ext {
		top--
	}
	if top == 8 && (lo>>63 == 1) == neg {
		return Value{N: int64(lo)}
	}
	w := &WideInt{Lo: lo, Neg: neg, U64: !neg && top == 8}
	switch {
	case w.U64:
		w.text = strconv.FormatUint(lo, 10)
	default:
		bits := 8 * top
		sign := ""
		if neg {
			sign = "negative "
		}
		// 2^bits has bits*log10(2) digits: "about", as the top byte
		// may not use all its bits.
		w.text = fmt.Sprintf("a %s%d-byte integer (about %d digits)", sign, top, bits*30103/100000+1)
	}
	return Value{X: w}
}

// ParseWideInt reads a decimal integer that strconv.ParseInt rejected as
// out of range (t is digits with an optional sign). It costs O(len(t)).
func ParseWideInt(t string) (Value, bool) {
	s, neg := t, false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" {
		return Value{}, false
	}
	var lo uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return Value{}, false
		}
		lo = lo*10 + uint64(c-'0') // modulo 2^64
	}
	w := &WideInt{Lo: lo, Neg: neg}
	if neg {
		w.Lo = -lo
	}
	if _, err := strconv.ParseUint(s, 10, 64); err == nil && !neg {
		w.U64 = true
	}
	w.text = t
	if len(t) > maxIntDigits {
		w.text = fmt.Sprintf("%s… (%d digits)", t[:maxIntDigits], len(s))
	}
	return Value{X: w}, true
}
