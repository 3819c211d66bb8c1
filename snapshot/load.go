package snapshot

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/snapview/snapview/internal/readahead"
	"github.com/snapview/snapview/internal/xzguard"
	"github.com/snapview/snapview/snapshot/pickle"
	"github.com/ulikunitz/xz"
)

// ErrNotSnapshot is wrapped by errors for input that decodes but is not a
// memory snapshot: a pickle of a model, a dict of something else, a JSON
// file of another shape.
var ErrNotSnapshot = errNotSnapshot

// errNotSnapshot marks faults that show the file is a pickle of something
// other than a memory snapshot.
var errNotSnapshot = errors.New("not a PyTorch memory snapshot")

// DecodeError is the error Load and Decode return: the file and the fault.
type DecodeError struct {
	// Path is the file name ("" for Decode of a bare reader).
	Path string
	Err  error
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Load reads and decodes the snapshot file at path. Errors are
// *DecodeError naming the file.
func Load(path string) (*Snapshot, error) {
	return LoadLimits(path, Limits{})
}

// LoadLimits is Load under the given limits (zero fields: the defaults).
// A file that passes one is a *DecodeError wrapping a *LimitError.
func LoadLimits(path string, lim Limits) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.IsDir() {
		return nil, &DecodeError{Path: path, Err: errors.New("is a directory, not a snapshot file")}
	}
	var size int64
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = st.Size()
	}
	s, err := decode(f, size, lim)
	if err != nil {
		var de *DecodeError
		if errors.As(err, &de) {
			de.Path = path
			return nil, de
		}
		return nil, &DecodeError{Path: path, Err: err}
	}
	return s, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

const readBuffer = 1 << 20

// Decode reads a snapshot from r: a pickle (protocol 2 to 5) or JSON, plain
// or gzip or xz compressed, recognised by content. It accepts the dict of
// _dump_snapshot() and the bare segment list of memory_snapshot(). A
// malformed file gives an error (never a panic); input that is not a
// snapshot gives an error wrapping ErrNotSnapshot.
//
// When r has a Stat method (an *os.File, or a reader that wraps one) and
// names a regular file, its size lets the decoder size the trace without
// copying it.
func Decode(r io.Reader) (s *Snapshot, err error) {
	return DecodeLimits(r, Limits{})
}

// DecodeLimits is Decode under the given limits (zero fields: the
// defaults).
func DecodeLimits(r io.Reader, lim Limits) (s *Snapshot, err error) {
	var size int64
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
	}
	return decode(r, size, lim)
}

// decode is Decode with the input's size when known (0 if not), which lets
// the decoder size the trace without copying it.
func decode(r io.Reader, size int64, lim Limits) (s *Snapshot, err error) {
	lim = lim.withDefaults()
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, &DecodeError{Err: fmt.Errorf("internal decoder fault: %v", p)}
		}
	}()
	raw := &countingReader{r: r}
	cr := raw
	br := bufio.NewReaderSize(cr, readBuffer)
	// rawUsed is the bytes of the file the decompressors consumed (not
	// those read ahead into br's buffer).
	br0 := br
	rawUsed := func() int64 { return raw.n - int64(br0.Buffered()) }
	compression := ""
	for layer := 0; ; layer++ {
		head, _ := br.Peek(6)
		switch {
		case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b && layer < 2:
			zr, err := gzip.NewReader(br)
			if err != nil {
				return nil, &DecodeError{Err: fmt.Errorf("reading gzip: %w", err)}
			}
			zr.Multistream(true)
			compression = "gzip"
			cr = &countingReader{r: newLimitReader(zr, rawUsed, lim, "gzip")}
			br = bufio.NewReaderSize(cr, readBuffer)
			continue
		case len(head) >= 6 && bytes.Equal(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}) && layer < 2:
			if err := checkXZDict(br, size, lim); err != nil {
				return nil, &DecodeError{Err: err}
			}
			var xin io.Reader = br
			if allowed := xzDictAllowed(size, lim); allowed >= 0 {
				xin = xzguard.New(br, func(dict int64) error { return xzDictError(dict, allowed, size) }) // every block's dictionary
			}
			xr, err := xz.NewReader(xin)
			if err != nil {
				return nil, &DecodeError{Err: fmt.Errorf("reading xz: %w", err)}
			}
			compression = "xz"
			cr = &countingReader{r: newLimitReader(xr, rawUsed, lim, "xz")}
			br = bufio.NewReaderSize(cr, readBuffer)
			continue
		}
		break
	}
	head, perr := br.Peek(1)
	if len(head) == 0 {
		if compression != "" {
			if perr == nil || perr == io.EOF {
				return nil, &DecodeError{Err: fmt.Errorf("the %s data holds nothing", compression)}
			}
			return nil, &DecodeError{Err: fmt.Errorf("reading %s: %w", compression, compressedErr(perr))}
		}
		return nil, &DecodeError{Err: errors.New("empty file")}
	}
	var root pickle.Value
	c := newConverter()
	c.lim = lim
	c.budget = newBudget(lim, func() int64 { return cr.n })
	switch trimmed := firstNonSpace(br); {
	case head[0] == 0x80:
		// Reading and decompressing run in a goroutine (internal/readahead);
		// the budget counts the bytes handed to the machine.
		ra := readahead.New(br)
		defer ra.Close()
		c.budget.Read = func() int64 { return ra.N() }
		var known int64
		if compression == "" {
			known = size
		}
		m := c.newMachine(ra, known)
		root, err = m.Run()
		c.m = nil
		ra.Close()
		if err != nil {
			return nil, &DecodeError{Err: wrapReadErr(err, compression)}
		}
		c.s.Format = Format{Encoding: "pickle", PickleProtocol: m.Protocol(), Bytes: ra.N()}
	case trimmed == '{' || trimmed == '[':
		root, err = decodeJSON(br, c)
		if err != nil {
			return nil, &DecodeError{Err: err}
		}
		c.s.Format = Format{Encoding: "json"}
	case head[0] == '(' || head[0] == '}' || head[0] == ']' || head[0] == 'c':
		return nil, &DecodeError{Err: fmt.Errorf("looks like a pickle of protocol 0 or 1; snapshots use protocols 2 to 5: %w", errNotSnapshot)}
	default:
		b, _ := br.Peek(8)
		if len(b) == 0 {
			return nil, &DecodeError{Err: fmt.Errorf("not a pickle or JSON (white space only): %w", errNotSnapshot)}
		}
		return nil, &DecodeError{Err: fmt.Errorf("not a pickle or JSON (starts with % x): %w", b, errNotSnapshot)}
	}
	c.root(root)
	if c.err != nil {
		return nil, &DecodeError{Err: c.err}
	}
	c.finish()
	if c.err != nil {
		return nil, &DecodeError{Err: c.err}
	}
	c.s.Format.Compression = compression
	if c.s.Format.Encoding != "pickle" {
		c.s.Format.Bytes = cr.n - int64(br.Buffered())
	}
	return c.s, nil
}

// compressedErr names a fault of compressed data in a user's words.
func compressedErr(err error) error {
	var le *LimitError
	if errors.As(err, &le) {
		return le
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated compressed data: %w", err)
	}
	return fmt.Errorf("corrupt compressed data: %w", err)
}

func wrapReadErr(err error, compression string) error {
	if compression != "" && errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w (inside %s data)", err, compression)
	}
	return err
}

// firstNonSpace returns the first byte of br that is not white space or
// a byte of the UTF-8 byte order mark (0 at the end of the input). White
// space past the first 64 bytes is consumed (JSON allows any amount before
// the value; the file's first 64 bytes stay for the errors that quote
// them).
func firstNonSpace(br *bufio.Reader) byte {
	b, _ := br.Peek(64)
	if c, ok := firstNonSpaceIn(b); ok {
		return c
	}
	if len(b) < 64 {
		return 0
	}
	for {
		b, _ := br.Peek(4096)
		k := 0
		for k < len(b) && isLeadingSpace(b[k]) {
			k++
		}
		if k < len(b) {
			return b[k]
		}
		if len(b) == 0 {
			return 0
		}
		br.Discard(k)
	}
}

func firstNonSpaceIn(b []byte) (byte, bool) {
	for _, c := range b {
		if !isLeadingSpace(c) {
			return c, true
		}
	}
	return 0, false
}

func isLeadingSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', 0xef, 0xbb, 0xbf: // white space, UTF-8 BOM
		return true
	}
	return false
}

// String returns a one-line description of the format, e.g. "pickle
// protocol 4, xz-compressed".
func (f Format) String() string {
	var b strings.Builder
	if f.Encoding == "pickle" {
		fmt.Fprintf(&b, "pickle protocol %d", f.PickleProtocol)
	} else {
		b.WriteString(f.Encoding)
	}
	if f.Compression != "" {
		fmt.Fprintf(&b, ", %s-compressed", f.Compression)
	}
	return b.String()
}
