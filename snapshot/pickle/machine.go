package pickle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/snapview/snapview/internal/units"
)

// Config is what a Machine reads with: its limits, where it charges what
// it builds, and who converts the records.
type Config struct {
	// Size is the input's size in bytes when known (a plain file), else 0.
	Size int64
	// MaxString is the longest str or bytes value, in bytes; MaxStack the
	// most values and marks on the stack. Both must be positive.
	MaxString int64
	MaxStack  int
	// Budget is charged for what the machine builds (NewBudget).
	Budget *Budget
	// Pool interns the strings; NewPool when nil.
	Pool *Pool
	// RecordKey makes a dict a record: a list whose first item is a dict
	// with this key hands its dicts to Converter as they are appended.
	RecordKey string
	// Converter takes the records and the lists and dicts converted to
	// references; nil: none (every list keeps its items).
	Converter Converter
	// Schema, when set, lets the batch reader (fast.go) read batches of
	// records straight from the input; nil: every opcode goes through
	// the generic machine.
	Schema *Schema
	// Foreign is wrapped by the errors for opcodes that show the pickle
	// is of something else (classes, objects, sets); its text starts
	// their message. Nil: ErrForeign.
	Foreign error
}

// ErrForeign is Config.Foreign's default.
var ErrForeign = errors.New("not plain data")

// Error is a fault at a byte offset of the pickle stream.
type Error struct {
	Off int64
	Msg string
	Err error // wrapped: io.ErrUnexpectedEOF, Config.Foreign, a read error, or nil
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s at byte %d", e.Msg, e.Off)
}

func (e *Error) Unwrap() error { return e.Err }

// denseMemoSlack: memo indexes beyond its length plus this go to a map.
const denseMemoSlack = 1 << 16

// Machine runs one pickle (see the package comment). It is not safe for
// concurrent use.
type Machine struct {
	src     io.Reader
	buf     []byte // read buffer: unread bytes are buf[rp:wp]
	rp, wp  int
	srcErr  error
	off     int64 // bytes consumed
	size    int64 // input size when known (a plain file), else 0
	pool    *Pool
	proto   int
	stack   []Value
	marks   []int
	memo    [][]uint32 // chunks of memoChunk slots (see Machine.pack)
	memoLen uint64
	memoFar map[uint64]Value
	objs    reusable[Value] // memoized values that are not compact references
	// wide holds the handles too wide for a memo slot.
	wide      reusable[uint64]
	evLists   []*List
	conv      Converter
	recordKey int64 // pool index of Config.RecordKey
	cfg       Config
	budget    *Budget
	free      []*Dict // converted dicts, for reuse
	freeL     []*List // converted lists, for reuse
	fast      fastDecoder
}

// New returns a machine that reads the pickle from src (nil for a
// consumer that only builds values and appends them, see Append).
func New(src io.Reader, cfg Config) *Machine {
	if cfg.Pool == nil {
		cfg.Pool = NewPool()
	}
	if cfg.Foreign == nil {
		cfg.Foreign = ErrForeign
	}
	m := &Machine{src: src, size: cfg.Size, pool: cfg.Pool, conv: cfg.Converter, cfg: cfg, budget: cfg.Budget}
	m.recordKey = m.pool.Add(cfg.RecordKey)
	return m
}

// Offset is the bytes of the input the machine has consumed.
func (m *Machine) Offset() int64 { return m.off }

// Size is Config.Size: the input's size, 0 when not known.
func (m *Machine) Size() int64 { return m.size }

// Protocol is the protocol its PROTO opcode gave (0 before one).
func (m *Machine) Protocol() int { return m.proto }

// Stats says how the machine read its input, for tests: the batches the
// batch reader took and gave up, and the memo handles kept wide.
type Stats struct {
	Batches, GivenUp, Wide int
}

// Stats returns the machine's Stats.
func (m *Machine) Stats() Stats {
	return Stats{Batches: m.fast.taken, GivenUp: m.fast.given, Wide: len(m.wide.items)}
}

const memoChunk = 1 << 16

func (m *Machine) fail(msg string, args ...any) error {
	return &Error{Off: m.off, Msg: fmt.Sprintf(msg, args...)}
}

func (m *Machine) failNot(msg string, args ...any) error {
	return &Error{Off: m.off, Msg: m.cfg.Foreign.Error() + ": " + fmt.Sprintf(msg, args...), Err: m.cfg.Foreign}
}

func (m *Machine) truncated() error {
	return &Error{Off: m.off, Msg: "truncated pickle (ends before its STOP opcode)", Err: io.ErrUnexpectedEOF}
}

const readBuf = 1 << 20

// fill makes at least n bytes readable (n <= len(m.buf)) or fails with a
// truncation error.
func (m *Machine) fill(n int) error {
	if m.buf == nil {
		m.buf = make([]byte, readBuf)
	}
	if m.rp > 0 {
		copy(m.buf, m.buf[m.rp:m.wp])
		m.wp -= m.rp
		m.rp = 0
	}
	for m.wp < n {
		if m.srcErr != nil {
			if m.srcErr == io.EOF || errors.Is(m.srcErr, io.ErrUnexpectedEOF) {
				return m.truncated()
			}
			var le *LimitError
			if errors.As(m.srcErr, &le) {
				return le
			}
			return &Error{Off: m.off, Msg: fmt.Sprintf("cannot read on (%v)", m.srcErr), Err: m.srcErr}
		}
		k, err := m.src.Read(m.buf[m.wp:])
		m.wp += k
		if err != nil {
			m.srcErr = err
		}
	}
	return nil
}

func (m *Machine) readByte() (byte, error) {
	if m.rp < m.wp {
		b := m.buf[m.rp]
		m.rp++
		m.off++
		return b, nil
	}
	return m.readByteSlow()
}

func (m *Machine) readByteSlow() (byte, error) {
	if err := m.fill(1); err != nil {
		return 0, err
	}
	b := m.buf[m.rp]
	m.rp++
	m.off++
	return b, nil
}

// readN returns the next n bytes (n <= readBuf); the slice is valid until
// the next read.
func (m *Machine) readN(n int) ([]byte, error) {
	if m.wp-m.rp < n {
		if err := m.fill(n); err != nil {
			return nil, err
		}
	}
	b := m.buf[m.rp : m.rp+n]
	m.rp += n
	m.off += int64(n)
	return b, nil
}

// readBytes reads n bytes into a new slice. It never allocates more than
// the input holds: a declared length of 4 GB in a short file fails after
// reading what exists.
func (m *Machine) readBytes(n uint64) ([]byte, error) {
	if n > uint64(m.cfg.MaxString) {
		// Say "truncated" when the file ends before the limit.
		at := m.off
		for left := m.cfg.MaxString + 1; left > 0; {
			c := min(left, readBuf)
			if _, err := m.readN(int(c)); err != nil {
				return nil, err
			}
			left -= c
		}
		return nil, &LimitError{Limit: "string length", Detail: fmt.Sprintf("a string of %d bytes at byte %d, longer than %s", n, at, units.Bytes(m.cfg.MaxString))}
	}
	if n <= readBuf {
		b, err := m.readN(int(n))
		if err != nil {
			return nil, err
		}
		return append([]byte(nil), b...), nil
	}
	var out []byte
	for n > 0 {
		c := n
		if c > readBuf {
			c = readBuf
		}
		b, err := m.readN(int(c))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		n -= c
	}
	return out, nil
}

// readStr reads n bytes of UTF-8 and interns them.
func (m *Machine) readStr(n uint64) (Value, error) {
	if n <= readBuf {
		b, err := m.readN(int(n))
		if err != nil {
			return Value{}, err
		}
		if !utf8.Valid(b) {
			return Value{}, m.fail("malformed pickle: string is not UTF-8")
		}
		return m.intern(b), nil
	}
	b, err := m.readBytes(n)
	if err != nil {
		return Value{}, err
	}
	if !utf8.Valid(b) {
		return Value{}, m.fail("malformed pickle: string is not UTF-8")
	}
	return m.intern(b), nil
}

// strEntryBytes is what the pool spends on a string beyond its bytes:
// its place in the list and in the index map.
const strEntryBytes = 64

// intern adds b to the string pool, charging the budget for a string it
// did not hold.
func (m *Machine) intern(b []byte) Value {
	n := len(m.pool.Strs)
	v := m.pool.AddBytes(b)
	if len(m.pool.Strs) != n {
		m.budget.Spend(int64(len(b)) + strEntryBytes)
	}
	return v
}

func (m *Machine) push(v Value) { m.stack = append(m.stack, v) }

// checkStack fails when the stack or its marks pass Limits.MaxStack: a
// pickle that pushes and never builds.
func (m *Machine) checkStack() error {
	if len(m.stack) > m.cfg.MaxStack || len(m.marks) > m.cfg.MaxStack {
		return &LimitError{Limit: "stack depth", Detail: fmt.Sprintf("over %d values on the pickle stack at byte %d (a list or dict that never closes?)", m.cfg.MaxStack, m.off)}
	}
	return nil
}

func (m *Machine) pop() (Value, error) {
	n := len(m.stack)
	if n == 0 || (len(m.marks) > 0 && m.marks[len(m.marks)-1] >= n) {
		return Value{}, m.fail("malformed pickle: stack underflow")
	}
	v := m.stack[n-1]
	m.stack = m.stack[:n-1]
	return v, nil
}

func (m *Machine) top() (*Value, error) {
	n := len(m.stack)
	if n == 0 || (len(m.marks) > 0 && m.marks[len(m.marks)-1] >= n) {
		return nil, m.fail("malformed pickle: stack underflow")
	}
	return &m.stack[n-1], nil
}

// topList returns the list at the top of the stack, for opcode op.
func (m *Machine) topList(op string) (*List, error) {
	t, err := m.top()
	if err != nil {
		return nil, err
	}
	l, ok := t.X.(*List)
	if !ok {
		return nil, m.fail("malformed pickle: %s to a %s", op, t.TypeName())
	}
	return l, nil
}

// topDict returns the dict at the top of the stack, for opcode op.
func (m *Machine) topDict(op string) (*Dict, error) {
	t, err := m.top()
	if err != nil {
		return nil, err
	}
	d, ok := t.X.(*Dict)
	if !ok {
		return nil, m.fail("malformed pickle: %s on a %s", op, t.TypeName())
	}
	return d, nil
}

// popMark returns the items above the topmost mark and removes them and the
// mark. The returned slice aliases the stack and is valid until the next
// push.
func (m *Machine) popMark() ([]Value, error) {
	if len(m.marks) == 0 {
		return nil, m.fail("malformed pickle: no MARK on the stack")
	}
	k := m.marks[len(m.marks)-1]
	m.marks = m.marks[:len(m.marks)-1]
	items := m.stack[k:]
	m.stack = m.stack[:k]
	return items, nil
}

// Run executes the pickle until STOP and returns the top-level value. Its
// errors are *Error (a fault at a byte offset) or *LimitError (a string,
// the stack or the budget past its limit).
func (m *Machine) Run() (Value, error) {
	for {
		if len(m.stack) > m.cfg.MaxStack || len(m.marks) > m.cfg.MaxStack {
			return Value{}, m.checkStack()
		}
		if m.budget.Err != nil {
			return Value{}, m.budget.Err
		}
		op, err := m.readByte()
		if err != nil {
			if m.off == 0 {
				return Value{}, &Error{Msg: "empty file", Err: io.ErrUnexpectedEOF}
			}
			return Value{}, err
		}
		if op == '.' { // STOP
			return m.pop()
		}
		if err := m.step(op); err != nil {
			return Value{}, err
		}
	}
}

// step runs one opcode other than STOP, by family.
func (m *Machine) step(op byte) error {
	switch op {
	case 0x80, 0x95, '(', '0', '1', '2':
		return m.opStack(op)
	case 'N', 0x88, 0x89, 'J', 'K', 'M', 0x8a, 0x8b, 'G':
		return m.opScalar(op)
	case 0x8c, 'X', 0x8d, 'U', 'T', 'C', 'B', 0x8e:
		return m.opString(op)
	case '}', ']', ')', 'd', 'l', 't', 0x85, 0x86, 0x87:
		return m.opBuild(op)
	case 'a', 'e', 's', 'u':
		return m.opFill(op)
	case 0x94, 'q', 'r', 'h', 'j':
		return m.opMemo(op)
	}
	return m.opRefused(op)
}

// opStack runs the opcodes of the stack itself: PROTO, FRAME, MARK (where a
// batch of records takes the batch reader), POP, POP_MARK, DUP.
func (m *Machine) opStack(op byte) error {
	switch op {
	case 0x80: // PROTO
		b, err := m.readByte()
		if err != nil {
			return err
		}
		if b < 2 || b > 5 {
			return m.fail("unsupported pickle protocol %d (snapshots use 2 to 5)", b)
		}
		m.proto = int(b)
	case 0x95: // FRAME
		if _, err := m.readN(8); err != nil {
			return err
		}
	case '(': // MARK
		if n := len(m.stack); n > 0 {
			// A batch of records takes the batch reader
			// (fast.go) where it can.
			if l, ok := m.stack[n-1].X.(*List); ok && m.fastTarget(l) && m.fastBatch(l) {
				return nil
			}
		}
		m.marks = append(m.marks, len(m.stack))
	case '0': // POP
		if len(m.stack) > 0 && len(m.marks) > 0 && m.marks[len(m.marks)-1] == len(m.stack) {
			m.marks = m.marks[:len(m.marks)-1]
		} else if _, err := m.pop(); err != nil {
			return err
		}
	case '1': // POP_MARK
		if _, err := m.popMark(); err != nil {
			return err
		}
	case '2': // DUP
		t, err := m.top()
		if err != nil {
			return err
		}
		addRef(*t)
		m.push(*t)
	}
	return nil
}

// opScalar pushes a scalar: None, the booleans, the ints (BININT, BININT1,
// BININT2, LONG1, LONG4) and BINFLOAT.
func (m *Machine) opScalar(op byte) error {
	switch op {
	case 'N':
		m.push(Value{X: None{}})
	case 0x88:
		m.push(Value{X: Bool(true)})
	case 0x89:
		m.push(Value{X: Bool(false)})
	case 'J': // BININT
		b, err := m.readN(4)
		if err != nil {
			return err
		}
		m.push(Value{N: int64(int32(binary.LittleEndian.Uint32(b)))})
	case 'K': // BININT1
		b, err := m.readByte()
		if err != nil {
			return err
		}
		m.push(Value{N: int64(b)})
	case 'M': // BININT2
		b, err := m.readN(2)
		if err != nil {
			return err
		}
		m.push(Value{N: int64(binary.LittleEndian.Uint16(b))})
	case 0x8a, 0x8b: // LONG1, LONG4
		var n uint64
		if op == 0x8a {
			b, err := m.readByte()
			if err != nil {
				return err
			}
			n = uint64(b)
		} else {
			b, err := m.readN(4)
			if err != nil {
				return err
			}
			n = uint64(binary.LittleEndian.Uint32(b))
			if int32(n) < 0 {
				return m.fail("malformed pickle: negative LONG4 length")
			}
		}
		var b []byte
		var err error
		if n <= 8 {
			b, err = m.readN(int(n))
		} else {
			b, err = m.readBytes(n)
		}
		if err != nil {
			return err
		}
		m.push(DecodeLong(b))
	case 'G': // BINFLOAT
		b, err := m.readN(8)
		if err != nil {
			return err
		}
		m.push(Value{X: math.Float64frombits(binary.BigEndian.Uint64(b))})
	}
	return nil
}

// opString pushes a str (interned) or a bytes value: SHORT_BINUNICODE,
// BINUNICODE, BINUNICODE8, the Python 2 SHORT_BINSTRING and BINSTRING,
// SHORT_BINBYTES, BINBYTES, BINBYTES8.
func (m *Machine) opString(op byte) error {
	switch op {
	case 0x8c, 'X', 0x8d: // SHORT_BINUNICODE, BINUNICODE, BINUNICODE8
		n, err := m.readLen(op)
		if err != nil {
			return err
		}
		v, err := m.readStr(n)
		if err != nil {
			return err
		}
		m.push(v)
	case 'U', 'T': // SHORT_BINSTRING, BINSTRING (Python 2 str)
		n, err := m.readLen(op)
		if err != nil {
			return err
		}
		b, err := m.readBytes(n)
		if err != nil {
			return err
		}
		m.push(m.intern([]byte(strings.ToValidUTF8(string(b), "\uFFFD"))))
	case 'C', 'B', 0x8e: // SHORT_BINBYTES, BINBYTES, BINBYTES8
		n, err := m.readLen(op)
		if err != nil {
			return err
		}
		b, err := m.readBytes(n)
		if err != nil {
			return err
		}
		m.push(Value{X: b})
	}
	return nil
}

// opBuild pushes a new container: EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, and
// DICT, LIST, TUPLE, TUPLE1-3 from the stack.
func (m *Machine) opBuild(op byte) error {
	switch op {
	case '}': // EMPTY_DICT
		m.push(Value{X: m.newDict()})
	case ']': // EMPTY_LIST
		m.push(Value{X: m.newList()})
	case ')': // EMPTY_TUPLE
		m.push(Value{X: &Tuple{}})
	case 'd': // DICT
		items, err := m.popMark()
		if err != nil {
			return err
		}
		if len(items)%2 != 0 {
			return m.fail("malformed pickle: DICT with an odd number of items")
		}
		d := &Dict{memo: -1, KV: append([]Value(nil), items...)}
		m.budget.Spend(int64(len(items)) * ValueBytes)
		m.push(Value{X: d})
	case 'l': // LIST
		items, err := m.popMark()
		if err != nil {
			return err
		}
		l := &List{memo: -1}
		cp := append([]Value(nil), items...)
		m.Append(l, cp)
		m.push(Value{X: l})
	case 't': // TUPLE
		items, err := m.popMark()
		if err != nil {
			return err
		}
		m.push(Value{X: &Tuple{Items: append([]Value(nil), items...)}})
		m.budget.Spend(int64(len(items)) * ValueBytes)
	case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
		k := int(op - 0x84)
		if len(m.stack) < k || (len(m.marks) > 0 && m.marks[len(m.marks)-1] > len(m.stack)-k) {
			return m.fail("malformed pickle: stack underflow")
		}
		t := &Tuple{Items: append([]Value(nil), m.stack[len(m.stack)-k:]...)}
		m.stack = m.stack[:len(m.stack)-k]
		m.push(Value{X: t})
	}
	return nil
}

// opFill adds to the container under the top of the stack: APPEND, APPENDS,
// SETITEM, SETITEMS.
func (m *Machine) opFill(op byte) error {
	switch op {
	case 'a': // APPEND
		v, err := m.pop()
		if err != nil {
			return err
		}
		l, err := m.topList("APPEND")
		if err != nil {
			return err
		}
		m.Append(l, []Value{v})
	case 'e': // APPENDS
		items, err := m.popMark()
		if err != nil {
			return err
		}
		l, err := m.topList("APPENDS")
		if err != nil {
			return err
		}
		m.Append(l, items)
	case 's': // SETITEM
		v, err := m.pop()
		if err != nil {
			return err
		}
		k, err := m.pop()
		if err != nil {
			return err
		}
		d, err := m.topDict("SETITEM")
		if err != nil {
			return err
		}
		c := cap(d.KV)
		d.KV = append(d.KV, k, v)
		if cap(d.KV) != c {
			m.budget.Spend(int64(cap(d.KV)-c) * ValueBytes)
		}
	case 'u': // SETITEMS
		items, err := m.popMark()
		if err != nil {
			return err
		}
		if len(items)%2 != 0 {
			return m.fail("malformed pickle: SETITEMS with an odd number of items")
		}
		d, err := m.topDict("SETITEMS")
		if err != nil {
			return err
		}
		c := cap(d.KV)
		d.KV = append(d.KV, items...)
		if cap(d.KV) != c {
			m.budget.Spend(int64(cap(d.KV)-c) * ValueBytes)
		}
	}
	return nil
}

// opMemo stores to the memo (MEMOIZE, BINPUT, LONG_BINPUT) and pushes from
// it (BINGET, LONG_BINGET).
func (m *Machine) opMemo(op byte) error {
	switch op {
	case 0x94: // MEMOIZE
		t, err := m.top()
		if err != nil {
			return err
		}
		m.memoPut(m.memoLen, *t)
	case 'q', 'r': // BINPUT, LONG_BINPUT
		idx, err := m.readMemoIndex(op == 'q')
		if err != nil {
			return err
		}
		t, err := m.top()
		if err != nil {
			return err
		}
		m.memoPut(idx, *t)
	case 'h', 'j': // BINGET, LONG_BINGET
		idx, err := m.readMemoIndex(op == 'h')
		if err != nil {
			return err
		}
		v, err := m.memoGet(idx)
		if err != nil {
			return err
		}
		m.push(v)
	}
	return nil
}

// opRefused fails on the opcodes plain data never holds: those that name
// Python classes or build objects, sets, and unknown opcodes.
func (m *Machine) opRefused(op byte) error {
	switch op {
	case 'c': // GLOBAL
		mod, _ := m.readLine()
		name, _ := m.readLine()
		return m.failNot("the pickle refers to the Python class %s.%s", mod, name)
	case 0x93: // STACK_GLOBAL
		name, _ := m.pop()
		mod, _ := m.pop()
		ms, _ := m.pool.Text(mod)
		ns, _ := m.pool.Text(name)
		return m.failNot("the pickle refers to the Python class %s.%s", ms, ns)
	case 'R', 'b', 0x81, 0x92, 'i', 'o', 'P', 'Q', 0x82, 0x83, 0x84, 0x96, 0x97, 0x98:
		return m.failNot("the pickle builds Python objects (opcode %s)", opName(op))
	case 0x8f, 0x90, 0x91: // EMPTY_SET, ADDITEMS, FROZENSET
		return m.failNot("the pickle holds a set")
	default:
		if m.off == 1 && op != 0x80 {
			return m.fail("not a pickle of protocol 2 to 5 (first byte 0x%02x)", op)
		}
		return m.fail("unsupported pickle opcode 0x%02x", op)
	}
}

// readMemoIndex reads the argument of BINPUT/BINGET (one byte, short) or
// LONG_BINPUT/LONG_BINGET (four bytes).
func (m *Machine) readMemoIndex(short bool) (uint64, error) {
	if short {
		b, err := m.readByte()
		return uint64(b), err
	}
	b, err := m.readN(4)
	if err != nil {
		return 0, err
	}
	return uint64(binary.LittleEndian.Uint32(b)), nil
}

func (m *Machine) readLen(op byte) (uint64, error) {
	switch op {
	case 0x8c, 'U', 'C':
		b, err := m.readByte()
		return uint64(b), err
	case 'X', 'T', 'B':
		b, err := m.readN(4)
		if err != nil {
			return 0, err
		}
		n := binary.LittleEndian.Uint32(b)
		if op == 'T' && int32(n) < 0 {
			return 0, m.fail("malformed pickle: negative string length")
		}
		return uint64(n), nil
	default:
		b, err := m.readN(8)
		if err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint64(b), nil
	}
}

func (m *Machine) readLine() (string, error) {
	var out []byte
	for len(out) < 256 {
		b, err := m.readByte()
		if err != nil {
			return string(out), err
		}
		if b == '\n' {
			break
		}
		out = append(out, b)
	}
	return string(out), nil
}

func opName(op byte) string {
	switch op {
	case 'R':
		return "REDUCE"
	case 'b':
		return "BUILD"
	case 0x81:
		return "NEWOBJ"
	case 0x92:
		return "NEWOBJ_EX"
	case 'i':
		return "INST"
	case 'o':
		return "OBJ"
	case 'P', 'Q':
		return "PERSID"
	}
	return fmt.Sprintf("0x%02x", op)
}
