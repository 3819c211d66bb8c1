package snapshot

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"sort"
	"strings"

	"github.com/ulikunitz/xz"
)

// ErrNotSnapshot is wrapped by errors for input that decodes but is not a
// memory snapshot: a pickle of a model, a dict of something else, a JSON
// file of another shape.
var ErrNotSnapshot = errNotSnapshot

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
	s, err := decode(f, size)
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
	var size int64
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		}
	}
	return decode(r, size)
}

// decode is Decode with the input's size when known (0 if not), which lets
// the decoder size the trace without copying it.
func decode(r io.Reader, size int64) (s *Snapshot, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, &DecodeError{Err: fmt.Errorf("internal decoder fault: %v", p)}
		}
	}()
	cr := &countingReader{r: r}
	br := bufio.NewReaderSize(cr, readBuffer)
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
			cr = &countingReader{r: zr}
			br = bufio.NewReaderSize(cr, readBuffer)
			continue
		case len(head) >= 6 && bytes.Equal(head, []byte{0xfd, '7', 'z', 'X', 'Z', 0}) && layer < 2:
			xr, err := xz.NewReader(br)
			if err != nil {
				return nil, &DecodeError{Err: fmt.Errorf("reading xz: %w", err)}
			}
			compression = "xz"
			cr = &countingReader{r: xr}
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
	var root val
	c := newConverter()
	switch trimmed := firstNonSpace(br); {
	case head[0] == 0x80:
		m := &machine{src: br, conv: c, pool: c.pool}
		if compression == "" {
			m.size = size
		}
		c.m = m
		root, err = m.run()
		c.m = nil
		if err != nil {
			return nil, &DecodeError{Err: wrapReadErr(err, compression)}
		}
		c.s.Format = Format{Encoding: "pickle", PickleProtocol: m.proto}
	case trimmed == '{' || trimmed == '[':
		root, err = decodeJSON(br, c.pool)
		if err != nil {
			return nil, &DecodeError{Err: err}
		}
		c.s.Format = Format{Encoding: "json"}
	case head[0] == '(' || head[0] == '}' || head[0] == ']' || head[0] == 'c':
		return nil, &DecodeError{Err: fmt.Errorf("looks like a pickle of protocol 0 or 1; snapshots use protocols 2 to 5: %w", errNotSnapshot)}
	default:
		b, _ := br.Peek(8)
		return nil, &DecodeError{Err: fmt.Errorf("not a pickle or JSON (starts with % x): %w", b, errNotSnapshot)}
	}
	c.root(root)
	if c.err != nil {
		return nil, &DecodeError{Err: c.err}
	}
	c.finish()
	c.s.Format.Compression = compression
	c.s.Format.Bytes = cr.n - int64(br.Buffered())
	return c.s, nil
}

// compressedErr names a fault of compressed data in a user's words.
func compressedErr(err error) error {
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

func firstNonSpace(br *bufio.Reader) byte {
	b, _ := br.Peek(64)
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case 0xef, 0xbb, 0xbf: // UTF-8 BOM
			continue
		}
		return c
	}
	return 0
}

// decodeJSON reads the JSON form MemoryViz accepts (the same structure as
// the pickle) into pickle values.
func decodeJSON(r io.Reader, p *strPool) (val, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return val{}, fmt.Errorf("reading JSON: %w", err)
	}
	return fromJSON(x, p), nil
}

func fromJSON(x any, p *strPool) val {
	switch t := x.(type) {
	case nil:
		return val{x: noneT{}}
	case bool:
		return val{x: boolT(t)}
	case string:
		return val{n: p.addString(t), x: strRef{}}
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return val{n: n}
		}
		if z, ok := new(big.Int).SetString(string(t), 10); ok {
			return val{x: z}
		}
		f, _ := t.Float64()
		return val{x: f}
	case []any:
		l := &plist{memo: -1}
		items := make([]val, len(t))
		for i, e := range t {
			items[i] = fromJSON(e, p)
		}
		l.items = items
		return val{x: l}
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		// Keep the usual key order first, for TopLevelKeys.
		order := map[string]int{"segments": 0, "device_traces": 1, "allocator_settings": 2, "external_annotations": 3}
		sort.SliceStable(keys, func(i, j int) bool {
			oi, iok := order[keys[i]]
			oj, jok := order[keys[j]]
			if iok && jok {
				return oi < oj
			}
			return iok && !jok
		})
		d := &pdict{memo: -1, kv: make([]val, 0, 2*len(t))}
		for _, k := range keys {
			d.kv = append(d.kv, val{n: p.addString(k), x: strRef{}}, fromJSON(t[k], p))
		}
		return val{x: d}
	}
	return val{x: noneT{}}
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
