package monitor

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// Text returns b as UTF-8 without a byte order mark: a log written on
// Windows may start with the UTF-8 BOM, or be UTF-16 (Windows PowerShell's
// "nvidia-smi ... > log.csv" writes UTF-16LE with a BOM). Other input is
// returned as it is.
func Text(b []byte) []byte {
	switch {
	case bytes.HasPrefix(b, []byte{0xef, 0xbb, 0xbf}):
		return b[3:]
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}):
		return fromUTF16(b[2:], func(p []byte) uint16 { return uint16(p[0]) | uint16(p[1])<<8 })
	case bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		return fromUTF16(b[2:], func(p []byte) uint16 { return uint16(p[1]) | uint16(p[0])<<8 })
	}
	return b
}

// fromUTF16 decodes UTF-16 code units read by unit; an odd last byte is
// dropped.
func fromUTF16(b []byte, unit func([]byte) uint16) []byte {
	units := make([]uint16, len(b)/2)
	for i := range units {
		units[i] = unit(b[2*i:])
	}
	out := make([]byte, 0, len(units))
	for _, r := range utf16.Decode(units) {
		out = utf8.AppendRune(out, r)
	}
	return out
}
