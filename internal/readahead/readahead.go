// Package readahead reads a source in a goroutine, a few blocks ahead of
// its caller, so that reading (system calls, or gzip and xz decompression)
// runs on another core while the caller decodes what was read.
package readahead

import "io"

// Reader reads its source in a goroutine, a few blocks ahead of the
// decoder, so that reading (system calls, or gzip and xz decompression,
// which for a large xz file takes longer than decoding) runs on another
// core while the pickle machine decodes. The bytes and the source's error
// come out in order, the error after the last byte before it.
//
// Close stops the goroutine and waits for it; after Close the source is no
// longer read, and what it counted may be read without a race.
type Reader struct {
	full   chan raBlock
	free   chan []byte
	stop   chan struct{}
	done   chan struct{}
	cur    raBlock
	pos    int
	closed bool
	// n is the bytes handed to the reader's caller.
	n int64
}

type raBlock struct {
	b   []byte
	err error
}

// The ring: readAheadBlocks blocks, the first readAheadFirst bytes (a
// small file costs little), each next one twice as large up to
// readAheadBlock: 704 KB in all, so that peak memory stays where it was
// without the goroutine.
const (
	readAheadFirst  = 64 << 10
	readAheadBlock  = 256 << 10
	readAheadBlocks = 4
)

// New starts reading r ahead; the caller must Close the Reader.
func New(r io.Reader) *Reader {
	ra := &Reader{
		full: make(chan raBlock, readAheadBlocks),
		free: make(chan []byte, readAheadBlocks),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go ra.loop(r)
	return ra
}

// loop fills free blocks from r until r fails (io.EOF included) or Close.
func (ra *Reader) loop(r io.Reader) {
	defer close(ra.done)
	made, size := 0, readAheadFirst
	for {
		var b []byte
		if made < readAheadBlocks {
			b = make([]byte, size)
			made++
			size = min(2*size, readAheadBlock)
		} else {
			select {
			case b = <-ra.free:
			case <-ra.stop:
				return
			}
		}
		n := 0
		var err error
		for n < len(b) && err == nil {
			var k int
			k, err = r.Read(b[n:])
			n += k
		}
		select {
		case ra.full <- raBlock{b: b[:n], err: err}:
		case <-ra.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (ra *Reader) Read(p []byte) (int, error) {
	for ra.pos == len(ra.cur.b) {
		if ra.cur.err != nil {
			return 0, ra.cur.err
		}
		if ra.cur.b != nil {
			ra.free <- ra.cur.b[:cap(ra.cur.b)]
		}
		ra.cur, ra.pos = <-ra.full, 0
	}
	k := copy(p, ra.cur.b[ra.pos:])
	ra.pos += k
	ra.n += int64(k)
	return k, nil
}

// N is the bytes Read has handed to the caller.
func (ra *Reader) N() int64 { return ra.n }

// Close stops the goroutine and waits until it no longer reads the source.
func (ra *Reader) Close() {
	if ra.closed {
		return
	}
	ra.closed = true
	close(ra.stop)
	<-ra.done
}
