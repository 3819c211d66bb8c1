package snapshot

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot/pickle"
)

// The JSON form MemoryViz accepts holds the same structure as the pickle.
// It is read as a stream, as the pickle is: each array item is appended as
// soon as it is parsed, so a trace entry becomes a TraceEntry at once and
// its dict is dropped. Memory follows the model, not the document (a
// 253 MB JSON snapshot needed 2.47 GB parsed whole).

// maxJSONDepth is how deep JSON arrays and objects may nest.
const maxJSONDepth = 10000

// jsonParser reads one JSON value from r into pickle values.
type jsonParser struct {
	r     *bufio.Reader
	m     *pickle.Machine
	c     *converter
	off   int64
	depth int
	buf   []byte
}

// decodeJSON reads the JSON form MemoryViz accepts (the same structure as
// the pickle) into pickle values, appending list items through the pickle
// machine's Append so that trace entries are converted as they come.
func decodeJSON(r *bufio.Reader, c *converter) (pickle.Value, error) {
	m := pickle.New(nil, pickle.Config{MaxString: c.lim.MaxString, MaxStack: c.lim.MaxStack, Budget: c.budget,
		Pool: c.pool, RecordKey: entryKeyNames[keyAction], Converter: c})
	c.unshared = true
	p := &jsonParser{r: r, m: m, c: c}
	v, err := p.value()
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			return pickle.Value{}, le
		}
		return pickle.Value{}, fmt.Errorf("reading JSON: %w", err)
	}
	return v, nil
}

// readErr is the error for a failed read: the end of the input, a limit
// passed (as it is), or the reader's fault.
func (p *jsonParser) readErr(err error) error {
	var le *LimitError
	switch {
	case err == io.EOF:
		return p.errorf("unexpected end of JSON input")
	case errors.As(err, &le):
		return le
	}
	return fmt.Errorf("at byte %d: %w", p.off, err)
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s at byte %d", fmt.Sprintf(format, args...), p.off)
}

// next returns the next byte that is not white space.
func (p *jsonParser) next() (byte, error) {
	for {
		b, err := p.r.ReadByte()
		if err != nil {
			return 0, p.readErr(err)
		}
		p.off++
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case 0xef, 0xbb, 0xbf:
			if p.off <= 3 { // a UTF-8 byte order mark
				continue
			}
		}
		return b, nil
	}
}

func (p *jsonParser) value() (pickle.Value, error) {
	b, err := p.next()
	if err != nil {
		return pickle.Value{}, err
	}
	if p.c.budget.Err != nil {
		return pickle.Value{}, p.c.budget.Err
	}
	switch {
	case b == '{':
		return p.object()
	case b == '[':
		return p.array()
	case b == '"':
		s, err := p.str()
		if err != nil {
			return pickle.Value{}, err
		}
		return pickle.Value{N: p.c.pool.Add(s), X: pickle.Str{}}, nil
	case b == '-' || b >= '0' && b <= '9':
		return p.number(b)
	case b == 't':
		return pickle.Value{X: pickle.Bool(true)}, p.literal("rue")
	case b == 'f':
		return pickle.Value{X: pickle.Bool(false)}, p.literal("alse")
	case b == 'n':
		return pickle.Value{X: pickle.None{}}, p.literal("ull")
	}
	return pickle.Value{}, p.errorf("invalid character %q looking for beginning of value", b)
}

func (p *jsonParser) literal(rest string) error {
	for i := 0; i < len(rest); i++ {
		b, err := p.r.ReadByte()
		if err != nil || b != rest[i] {
			return p.errorf("invalid literal")
		}
		p.off++
	}
	return nil
}

func (p *jsonParser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return &LimitError{Limit: "stack depth", Detail: fmt.Sprintf("JSON nested over %d deep at byte %d", maxJSONDepth, p.off)}
	}
	return nil
}

func (p *jsonParser) object() (pickle.Value, error) {
	if err := p.enter(); err != nil {
		return pickle.Value{}, err
	}
	defer func() { p.depth-- }()
	d := pickle.NewDict()
	b, err := p.next()
	if err != nil {
		return pickle.Value{}, err
	}
	if b == '}' {
		return pickle.Value{X: d}, nil
	}
	for {
		if b != '"' {
			return pickle.Value{}, p.errorf("invalid character %q looking for beginning of object key string", b)
		}
		k, err := p.str()
		if err != nil {
			return pickle.Value{}, err
		}
		if b, err = p.next(); err != nil {
			return pickle.Value{}, err
		}
		if b != ':' {
			return pickle.Value{}, p.errorf("invalid character %q after object key", b)
		}
		v, err := p.value()
		if err != nil {
			return pickle.Value{}, err
		}
		c := cap(d.KV)
		d.KV = append(d.KV, pickle.Value{N: p.c.pool.Add(k), X: pickle.Str{}}, v)
		if cap(d.KV) != c {
			p.c.budget.Spend(int64(cap(d.KV)-c) * pickle.ValueBytes)
		}
		if b, err = p.next(); err != nil {
			return pickle.Value{}, err
		}
		switch b {
		case '}':
			return pickle.Value{X: d}, nil
		case ',':
			if b, err = p.next(); err != nil {
				return pickle.Value{}, err
			}
		default:
			return pickle.Value{}, p.errorf("invalid character %q after object key:value pair", b)
		}
	}
}

func (p *jsonParser) array() (pickle.Value, error) {
	if err := p.enter(); err != nil {
		return pickle.Value{}, err
	}
	defer func() { p.depth-- }()
	l := pickle.NewList()
	b, err := p.r.ReadByte()
	for err == nil && (b == ' ' || b == '\t' || b == '\r' || b == '\n') {
		p.off++
		b, err = p.r.ReadByte()
	}
	if err == nil && b == ']' {
		p.off++
		return pickle.Value{X: l}, nil
	}
	if err == nil {
		_ = p.r.UnreadByte()
	}
	var one [1]pickle.Value
	for {
		v, err := p.value()
		if err != nil {
			return pickle.Value{}, err
		}
		one[0] = v
		p.m.Append(l, one[:])
		b, err := p.next()
		if err != nil {
			return pickle.Value{}, err
		}
		switch b {
		case ']':
			return pickle.Value{X: l}, nil
		case ',':
		default:
			return pickle.Value{}, p.errorf("invalid character %q after array element", b)
		}
	}
}

// str reads a string after its opening quote.
func (p *jsonParser) str() (string, error) {
	p.buf = p.buf[:0]
	escaped := false
	for {
		b, err := p.r.ReadByte()
		if err != nil {
			return "", p.readErr(err)
		}
		p.off++
		if b == '"' {
			break
		}
		if b < 0x20 {
			return "", p.errorf("invalid character %q in string literal", b)
		}
		p.buf = append(p.buf, b)
		if b == '\\' {
			escaped = true
			c, err := p.r.ReadByte()
			if err != nil {
				return "", p.readErr(err)
			}
			p.off++
			p.buf = append(p.buf, c)
		}
		if int64(len(p.buf)) > p.c.lim.MaxString {
			return "", &LimitError{Limit: "string length", Detail: fmt.Sprintf("a JSON string longer than %s at byte %d", units.Bytes(p.c.lim.MaxString), p.off)}
		}
	}
	if !escaped {
		if utf8.Valid(p.buf) {
			return string(p.buf), nil
		}
		return strings.ToValidUTF8(string(p.buf), "\uFFFD"), nil
	}
	var s string
	q := make([]byte, 0, len(p.buf)+2)
	q = append(append(append(q, '"'), p.buf...), '"')
	if err := json.Unmarshal(q, &s); err != nil {
		return "", p.errorf("invalid string literal: %v", err)
	}
	return s, nil
}

// number reads a number whose first byte is b, as json.Number would give
// it: an int64 when it is one, a *wideInt for a wider integer, else a
// float64.
func (p *jsonParser) number(b byte) (pickle.Value, error) {
	p.buf = append(p.buf[:0], b)
	for {
		c, err := p.r.ReadByte()
		if err != nil {
			break
		}
		if c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.buf = append(p.buf, c)
			p.off++
			if len(p.buf) > 4096 {
				return pickle.Value{}, p.errorf("number too long")
			}
			continue
		}
		_ = p.r.UnreadByte()
		break
	}
	t := string(p.buf)
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		return pickle.Value{N: n}, nil
	}
	if v, ok := pickle.ParseWideInt(t); ok {
		return v, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return pickle.Value{}, p.errorf("invalid number %q", t)
	}
	return pickle.Value{X: f}, nil
}
