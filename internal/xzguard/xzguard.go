// Package xzguard follows the layout of an xz file (the xz file format
// 1.0.4) as it is read, so that the LZMA2 dictionary each block header asks
// for is checked before github.com/ulikunitz/xz allocates it (up to 4 GiB a
// block, whatever its ReaderConfig says). The bound and its error are the
// caller's (snapshot's decode limits).
package xzguard

import (
	"bufio"
	"bytes"
	"io"
)

// Reader passes an xz file to the xz reader while following its layout
// (the xz file format 1.0.4: stream header and footer, block headers,
// LZMA2 chunks, block padding and check, index, stream padding), so that
// the header of every block, not only the first (FirstDict), is read
// and its LZMA2 dictionary checked against the bound before the xz
// reader sees it: github.com/ulikunitz/xz allocates the dictionary a
// block header names (up to 4 GiB) when it comes to the block. A block's
// end is found from the sizes its LZMA2 chunk headers give, without
// decompressing. Where the layout is not what the format says, the guard
// stops following it and leaves the fault to the xz reader (which then
// fails on the same bytes); a dictionary over the bound ends the read in
// the error the caller's over function returns for it.
type Reader struct {
	br   *bufio.Reader
	over func(dict int64) error // the error for a block's dictionary, nil when allowed

	state  int
	left   int64 // bytes of the current span still to pass
	check  int   // bytes of each block's check (from the stream flags)
	block  int64 // bytes of the current block so far (for its padding)
	lost   bool  // the layout is not followed any more
	err    error
	recs   uint64 // index records still to skip
	inRecs int    // varints still to skip in the index records
}

const (
	xzStreamHeader = iota // 12 bytes, then a block or the index
	xzBlockOrIndex
	xzChunk     // an LZMA2 chunk's header, or the end of the block's data
	xzBlockTail // padding and check
	xzIndex
	xzStreamPad // zero padding, another stream or the end
)

// New returns a Reader of the xz file in br that asks over, for the
// LZMA2 dictionary size (bytes) of each block's header, the error that
// ends the read (nil: the dictionary is allowed).
func New(br *bufio.Reader, over func(dict int64) error) *Reader {
	return &Reader{br: br, over: over}
}

func (g *Reader) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if g.lost {
		return g.br.Read(p)
	}
	for g.left == 0 {
		if !g.next() {
			if g.err != nil {
				return 0, g.err
			}
			if g.lost {
				return g.br.Read(p)
			}
			return 0, io.EOF
		}
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n, err := g.br.Read(p)
	g.left -= int64(n)
	g.block += int64(n)
	return n, err
}

// next reads the layout ahead (without consuming it) and sets the next
// span to pass; false at the end of the file, or when lost or failed.
func (g *Reader) next() bool {
	peek := func(n int) []byte {
		b, _ := g.br.Peek(n)
		if len(b) < n {
			return nil
		}
		return b
	}
	lose := func() bool { g.lost = true; return false }
	switch g.state {
	case xzStreamHeader:
		h := peek(12)
		if h == nil || !bytes.Equal(h[:6], []byte{0xfd, '7', 'z', 'X', 'Z', 0}) {
			return lose()
		}
		g.check = xzCheckSize(h[7] & 0x0f)
		g.left, g.state = 12, xzBlockOrIndex
	case xzBlockOrIndex:
		b := peek(1)
		if b == nil {
			return lose()
		}
		if b[0] == 0 {
			g.state, g.left = xzIndex, 1
			g.recs, g.inRecs = 0, -1
			g.block = 0
			return true
		}
		hlen := (int(b[0]) + 1) * 4
		h := peek(hlen)
		if h == nil {
			return lose()
		}
		if dict, ok := headerDict(h); ok {
			if err := g.over(dict); err != nil {
				g.err = err
				return false
			}
		}
		g.block = 0
		g.left, g.state = int64(hlen), xzChunk
	case xzChunk:
		b := peek(1)
		if b == nil {
			return lose()
		}
		switch c := b[0]; {
		case c == 0:
			g.left, g.state = 1, xzBlockTail
		case c == 1 || c == 2:
			h := peek(3)
			if h == nil {
				return lose()
			}
			g.left = 3 + int64(h[1])<<8 + int64(h[2]) + 1
		case c >= 0x80:
			hl := 5
			if c >= 0xc0 {
				hl = 6 // a properties byte follows
			}
			h := peek(5)
			if h == nil {
				return lose()
			}
			g.left = int64(hl) + int64(h[3])<<8 + int64(h[4]) + 1
		default:
			return lose()
		}
	case xzBlockTail:
		pad := (4 - g.block%4) % 4
		g.left, g.state = pad+int64(g.check), xzBlockOrIndex
		if g.left == 0 {
			return g.next()
		}
	case xzIndex:
		// Number of records, then two varints per record, padding to
		// 4, CRC32, then the 12-byte stream footer.
		if g.inRecs < 0 {
			v, n, ok := g.varint(peek)
			if !ok {
				return lose()
			}
			g.recs, g.inRecs = v, 0
			g.left = int64(n)
			if g.recs > 1<<40 {
				return lose()
			}
			return true
		}
		if g.recs > 0 {
			_, n, ok := g.varint(peek)
			if !ok {
				return lose()
			}
			g.left = int64(n)
			if g.inRecs++; g.inRecs == 2 {
				g.inRecs = 0
				g.recs--
			}
			return true
		}
		pad := (4 - g.block%4) % 4
		g.left, g.state = pad+4+12, xzStreamPad
	case xzStreamPad:
		b, _ := g.br.Peek(6)
		switch {
		case len(b) == 0:
			return false
		case len(b) >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0:
			g.left = 4
		case len(b) == 6 && bytes.Equal(b, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
			g.state = xzStreamHeader
			return g.next()
		default:
			return lose()
		}
	}
	return true
}

// varint reads the xz multibyte integer ahead: its value and length.
func (g *Reader) varint(peek func(int) []byte) (uint64, int, bool) {
	var v uint64
	for i := 0; i < 9; i++ {
		b := peek(i + 1)
		if b == nil {
			return 0, 0, false
		}
		c := b[i]
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, i + 1, true
		}
	}
	return 0, 0, false
}

// xzCheckSize is the size in bytes of a block's check for the check type
// of the stream flags (xz file format 1.0.4, 2.1.1.2).
func xzCheckSize(t byte) int {
	switch {
	case t == 0:
		return 0
	case t <= 3:
		return 4
	case t <= 6:
		return 8
	case t <= 9:
		return 16
	case t <= 12:
		return 32
	}
	return 64
}

// FirstDict returns the dictionary size of the LZMA2 filter of the
// first block in br, without consuming it.
func FirstDict(br *bufio.Reader) (int64, bool) {
	const streamHeader = 12
	b, _ := br.Peek(streamHeader + 1)
	if len(b) < streamHeader+1 || b[streamHeader] == 0 {
		return 0, false // no block (an index follows) or a short file
	}
	hlen := (int(b[streamHeader]) + 1) * 4
	b, _ = br.Peek(streamHeader + hlen)
	if len(b) < streamHeader+hlen {
		return 0, false
	}
	return headerDict(b[streamHeader:])
}

// headerDict returns the dictionary size of the LZMA2 filter named by
// the block header h (its size byte first, its CRC32 last).
func headerDict(h []byte) (int64, bool) {
	h = h[:len(h)-4] // without the CRC32
	flags := h[1]
	p := 2
	varint := func() (uint64, bool) {
		var v uint64
		for i := 0; i < 9 && p < len(h); i++ {
			c := h[p]
			p++
			v |= uint64(c&0x7f) << (7 * i)
			if c&0x80 == 0 {
				return v, true
			}
		}
		return 0, false
	}
	if flags&0x40 != 0 { // compressed size
		if _, ok := varint(); !ok {
			return 0, false
		}
	}
	if flags&0x80 != 0 { // uncompressed size
		if _, ok := varint(); !ok {
			return 0, false
		}
	}
	for range int(flags&3) + 1 {
		id, ok := varint()
		if !ok {
			return 0, false
		}
		n, ok := varint()
		if !ok || p+int(n) > len(h) {
			return 0, false
		}
		if id == 0x21 && n == 1 { // LZMA2
			code := h[p]
			if code > 40 {
				return 0, false
			}
			if code == 40 {
				return 1<<32 - 1, true
			}
			return int64(2|code&1) << (code/2 + 11), true
		}
		p += int(n)
	}
	return 0, false
}
