package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/snapview/snapview/internal/units"
)

// This file is a small pickle virtual machine for the opcode subset that
// memory snapshots use (protocols 2 to 5, see docs/format.md, "Pickle
// encoding"): dicts, lists, tuples, str, int of any width, float, bool and None,
// with the memo. It never resolves globals: GLOBAL, STACK_GLOBAL, REDUCE,
// BUILD, NEWOBJ and friends are errors, so a hostile file cannot run code.
//
// Trace entries are the bulk of a snapshot (millions of small dicts). To keep
// memory in proportion to the model rather than to the pickle's object tree,
// a dict that looks like a trace entry (it has an "action" key) is converted
// to a TraceEntry as soon as it is appended to a list, and the dict is
// dropped. The memo keeps a reference to the converted entry, so the pickle's
// semantics are kept even if a file refers to the same entry twice.

// pkind is the kind of a non-int pickle value held in val.x.
type noneT struct{}
type markT struct{}
type boolT bool

// strRef is a str value: n indexes the string pool. Strings are pooled as
// they are read, so repeated frame file names cost one copy.
type strRef struct{}

// strPool interns every string read from the file.
type strPool struct {
	list []string
	idx  map[string]int64
	// action is the pool index of "action"; -1 until seen.
	action int64
}

func newStrPool() *strPool {
	p := &strPool{idx: map[string]int64{}}
	p.action = p.addString("action")
	return p
}

// add interns b and returns its value; it allocates only for a string not
// seen before.
func (p *strPool) add(b []byte) val {
	if i, ok := p.idx[string(b)]; ok {
		return val{n: i, x: strRef{}}
	}
	return val{n: p.addString(string(b)), x: strRef{}}
}

func (p *strPool) addString(s string) int64 {
	if i, ok := p.idx[s]; ok {
		return i
	}
	i := int64(len(p.list))
	p.list = append(p.list, s)
	p.idx[s] = i
	return i
}

// str returns the string held by v, if v is a str.
func (p *strPool) str(v val) (string, bool) {
	if _, ok := v.x.(strRef); ok {
		return p.list[v.n], true
	}
	return "", false
}

// isEntry reports whether v is a dict with an "action" key: a trace entry.
func (p *strPool) isEntry(v val) bool {
	switch x := v.x.(type) {
	case *pdict:
		for i := 0; i+1 < len(x.kv); i += 2 {
			if _, ok := x.kv[i].x.(strRef); ok && x.kv[i].n == p.action {
				return true
			}
		}
	case *evList:
		return true
	}
	return false
}

// val is one pickle value. Ints live in n with x == nil; every other value
// is in x: noneT, markT, boolT, float64, strRef, []byte, *wideInt, *plist,
// *pdict, *ptuple, or *evList (a trace entry converted in place; n is its
// index in the list's events).
type val struct {
	n int64
	x any
}

type plist struct {
	items []val
	memo  int64 // memo index of this list, or -1
	evID  int32 // 1 + index in machine.evLists, 0 when not yet listed
	// stack is the StackID+1 this list was converted to as a frame list
	// (0: not converted); items are then released.
	stack StackID
	// evChunks hold the trace entries converted while appending; a list is
	// in event mode when its first appended item was a trace-entry dict.
	evChunks [][]TraceEntry
	evLen    int
	evStart  int64 // input offset at the first entry
	evMode   bool
	evError  error // first item of an event-mode list that was not an entry
	// taken holds the entries once takeEvents gave them out: a list the
	// file references for two devices gives both the same entries,
	// shared, not copied.
	taken   []TraceEntry
	isTaken bool
	// refs and recycled: as for pdict.
	refs     int32
	recycled bool
}

// evFirst is the capacity of a trace's first chunk of entries; it grows
// to evChunk, the size of the next ones.
const (
	evFirst = 2
	evChunk = 1 << 14
)

// addEvent appends a converted trace entry. Entries go in chunks of
// evChunk; once the first chunk is full and the input's size is known, one
// chunk is sized for the whole list from the bytes per entry so far, so
// that the final slice needs no copy (capacity never written to costs no
// resident memory).
func (m *machine) addEvent(l *plist, e TraceEntry) int {
	n := len(l.evChunks)
	if n == 0 {
		l.evStart = m.off
		l.evChunks = append(l.evChunks, make([]TraceEntry, 0, evFirst))
		n++
	} else if c := l.evChunks[0]; n == 1 && len(c) == cap(c) && len(c) < evChunk {
		// The first chunk grows from evFirst to evChunk, so that a
		// device with a few entries costs a few entries.
		grown := make([]TraceEntry, len(c), min(4*len(c), evChunk))
		copy(grown, c)
		l.evChunks[0] = grown
	} else if c := l.evChunks[n-1]; len(c) == cap(c) {
		size := evChunk
		if n == 1 && m.size > m.off {
			perEntry := float64(m.off-l.evStart) / float64(len(c))
			if perEntry < 16 {
				perEntry = 16
			}
			rest := float64(m.size-m.off)/perEntry*1.05 + 1024
			if rest < 1<<31 {
				size = len(c) + int(rest)
			}
		}
		if n == 1 && size > evChunk {
			big := make([]TraceEntry, len(c), size)
			copy(big, c)
			l.evChunks[0] = big
		} else {
			l.evChunks = append(l.evChunks, make([]TraceEntry, 0, size))
			n++
		}
	}
	l.evChunks[n-1] = append(l.evChunks[n-1], e)
	l.evLen++
	m.budget.spend(entryBytes)
	return l.evLen - 1
}

// entryBytes is the size of a TraceEntry, charged to the budget for
// each entry appended.
const entryBytes = 48

func (l *plist) event(i int64) TraceEntry {
	for _, c := range l.evChunks {
		if i < int64(len(c)) {
			return c[i]
		}
		i -= int64(len(c))
	}
	return TraceEntry{}
}

// takeEvents returns the converted entries as one slice, joining chunks
// only when there are several.
func (l *plist) takeEvents() []TraceEntry {
	if l.isTaken {
		return l.taken
	}
	l.isTaken = true
	if len(l.evChunks) == 1 {
		out := l.evChunks[0]
		l.evChunks = nil
		l.taken = out
		return out
	}
	out := make([]TraceEntry, 0, l.evLen)
	for i, c := range l.evChunks {
		out = append(out, c...)
		l.evChunks[i] = nil
	}
	l.evChunks = nil
	l.taken = out
	return out
}

// evList is a plist seen through a converted trace entry in the memo.
type evList plist

// frameRef and stackRef are memo values of frame dicts and frame lists
// already converted: n holds the FrameID or StackID.
type frameRef struct{}
type stackRef struct{}

type pdict struct {
	kv   []val // key, value, key, value, ...
	memo int64 // memo index of this dict, or -1
	// refs counts the references made by BINGET and DUP beyond the one
	// that created the dict. A converted dict is released once per
	// reference and recycled at the last release; references that are
	// never released (from non-entry containers) keep it alive.
	refs     int32
	recycled bool
}

// valBytes is the size of a val, charged to the budget for each slot of
// a list, dict or tuple.
const valBytes = 24

type ptuple struct {
	items []val
}

func (v val) isInt() bool { return v.x == nil }

// typeName names a value's Python type for error messages.
func (v val) typeName() string {
	switch x := v.x.(type) {
	case nil, *wideInt:
		return "int"
	case noneT:
		return "None"
	case markT:
		return "mark"
	case boolT:
		return "bool"
	case float64:
		return "float"
	case strRef:
		return "str"
	case []byte:
		return "bytes"
	case *plist:
		return "list"
	case *pdict:
		return "dict"
	case *ptuple:
		return "tuple"
	case *evList:
		return "dict"
	case frameRef:
		return "dict"
	case stackRef:
		return "list"
	default:
		_ = x
		return "object"
	}
}

// errNotSnapshot marks faults that show the file is a pickle of something
// other than a memory snapshot.
var errNotSnapshot = errors.New("not a PyTorch memory snapshot")

// pickleError is a fault at a byte offset of the pickle stream.
type pickleError struct {
	off int64
	msg string
	err error
}

func (e *pickleError) Error() string {
	return fmt.Sprintf("%s at byte %d", e.msg, e.off)
}

func (e *pickleError) Unwrap() error { return e.err }

// Limits that keep hostile input from taking memory out of proportion to
// the file.
const (
	maxChunk       = 1 << 20 // read long strings in pieces of this size
	denseMemoSlack = 1 << 16 // memo indexes beyond len+slack go to a map
)

type machine struct {
	src     io.Reader
	buf     []byte // read buffer: unread bytes are buf[rp:wp]
	rp, wp  int
	srcErr  error
	off     int64 // bytes consumed
	size    int64 // input size when known (a plain file), else 0
	pool    *strPool
	proto   int
	stack   []val
	marks   []int
	memo    [][]uint32 // chunks of memoChunk slots (see machine.pack)
	memoLen uint64
	memoFar map[uint64]val
	objs    reusable[val] // memoized values that are not compact references
	// wide holds the handles too wide for a memo slot.
	wide    reusable[uint64]
	evLists []*plist
	conv    *converter
	lim     Limits
	budget  *budget
	free    []*pdict // converted dicts, for reuse
	freeL   []*plist // converted frame lists, for reuse
	fast    fastDecoder
}

const memoChunk = 1 << 16

func (m *machine) fail(msg string, args ...any) error {
	return &pickleError{off: m.off, msg: fmt.Sprintf(msg, args...)}
}

func (m *machine) failNot(msg string, args ...any) error {
	return &pickleError{off: m.off, msg: "not a PyTorch memory snapshot: " + fmt.Sprintf(msg, args...), err: errNotSnapshot}
}

func (m *machine) truncated() error {
	return &pickleError{off: m.off, msg: "truncated pickle (ends before its STOP opcode)", err: io.ErrUnexpectedEOF}
}

const readBuf = 1 << 20

// fill makes at least n bytes readable (n <= len(m.buf)) or fails with a
// truncation error.
func (m *machine) fill(n int) error {
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
			return &pickleError{off: m.off, msg: fmt.Sprintf("cannot read on (%v)", m.srcErr), err: m.srcErr}
		}
		k, err := m.src.Read(m.buf[m.wp:])
		m.wp += k
		if err != nil {
			m.srcErr = err
		}
	}
	return nil
}

func (m *machine) readByte() (byte, error) {
	if m.rp < m.wp {
		b := m.buf[m.rp]
		m.rp++
		m.off++
		return b, nil
	}
	return m.readByteSlow()
}

func (m *machine) readByteSlow() (byte, error) {
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
func (m *machine) readN(n int) ([]byte, error) {
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
func (m *machine) readBytes(n uint64) ([]byte, error) {
	if n > uint64(m.lim.MaxString) {
		// Say "truncated" when the file ends before the limit.
		at := m.off
		for left := m.lim.MaxString + 1; left > 0; {
			c := min(left, readBuf)
			if _, err := m.readN(int(c)); err != nil {
				return nil, err
			}
			left -= c
		}
		return nil, &LimitError{Limit: "string length", Detail: fmt.Sprintf("a string of %d bytes at byte %d, longer than %s", n, at, units.Bytes(m.lim.MaxString))}
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
func (m *machine) readStr(n uint64) (val, error) {
	if n <= readBuf {
		b, err := m.readN(int(n))
		if err != nil {
			return val{}, err
		}
		if !utf8.Valid(b) {
			return val{}, m.fail("malformed pickle: string is not UTF-8")
		}
		return m.intern(b), nil
	}
	b, err := m.readBytes(n)
	if err != nil {
		return val{}, err
	}
	if !utf8.Valid(b) {
		return val{}, m.fail("malformed pickle: string is not UTF-8")
	}
	return m.intern(b), nil
}

// strEntryBytes is what the pool spends on a string beyond its bytes:
// its place in the list and in the index map.
const strEntryBytes = 64

// intern adds b to the string pool, charging the budget for a string it
// did not hold.
func (m *machine) intern(b []byte) val {
	n := len(m.pool.list)
	v := m.pool.add(b)
	if len(m.pool.list) != n {
		m.budget.spend(int64(len(b)) + strEntryBytes)
	}
	return v
}

func (m *machine) push(v val) { m.stack = append(m.stack, v) }

// checkStack fails when the stack or its marks pass Limits.MaxStack: a
// pickle that pushes and never builds.
func (m *machine) checkStack() error {
	if len(m.stack) > m.lim.MaxStack || len(m.marks) > m.lim.MaxStack {
		return &LimitError{Limit: "stack depth", Detail: fmt.Sprintf("over %d values on the pickle stack at byte %d (a list or dict that never closes?)", m.lim.MaxStack, m.off)}
	}
	return nil
}

func (m *machine) pop() (val, error) {
	n := len(m.stack)
	if n == 0 || (len(m.marks) > 0 && m.marks[len(m.marks)-1] >= n) {
		return val{}, m.fail("malformed pickle: stack underflow")
	}
	v := m.stack[n-1]
	m.stack = m.stack[:n-1]
	return v, nil
}

func (m *machine) top() (*val, error) {
	n := len(m.stack)
	if n == 0 || (len(m.marks) > 0 && m.marks[len(m.marks)-1] >= n) {
		return nil, m.fail("malformed pickle: stack underflow")
	}
	return &m.stack[n-1], nil
}

// topList returns the list at the top of the stack, for opcode op.
func (m *machine) topList(op string) (*plist, error) {
	t, err := m.top()
	if err != nil {
		return nil, err
	}
	l, ok := t.x.(*plist)
	if !ok {
		return nil, m.fail("malformed pickle: %s to a %s", op, t.typeName())
	}
	return l, nil
}

// topDict returns the dict at the top of the stack, for opcode op.
func (m *machine) topDict(op string) (*pdict, error) {
	t, err := m.top()
	if err != nil {
		return nil, err
	}
	d, ok := t.x.(*pdict)
	if !ok {
		return nil, m.fail("malformed pickle: %s on a %s", op, t.typeName())
	}
	return d, nil
}

// popMark returns the items above the topmost mark and removes them and the
// mark. The returned slice aliases the stack and is valid until the next
// push.
func (m *machine) popMark() ([]val, error) {
	if len(m.marks) == 0 {
		return nil, m.fail("malformed pickle: no MARK on the stack")
	}
	k := m.marks[len(m.marks)-1]
	m.marks = m.marks[:len(m.marks)-1]
	items := m.stack[k:]
	m.stack = m.stack[:k]
	return items, nil
}

// A memo handle is 8 bytes: the top 4 bits are the kind, the rest the
// payload. The memo itself keeps each handle in a 4-byte slot (see
// machine.pack), so that a file with millions of memoized trace entries
// keeps a small, pointer-free memo.
const (
	hUnset = 0
	hObj   = 1 // payload: index in machine.objs
	hStr   = 2 // payload: string pool index
	hFrame = 3 // payload: FrameID
	hStack = 4 // payload: StackID
	// hEvent's payload is short, evLists index << evShortShift | event
	// index, when the list is one of the first 1<<evShortLists and the
	// index below 1<<evShortShift (a few devices, under 67M entries
	// each: it then fits a slot); else long, evLong | evLists index <<
	// evShift | event index.
	hEvent = 5
	hInt   = 6 // payload: a non-negative int below 2^60
	hShift = 60
	hMask  = 1<<hShift - 1

	evShortShift = 26
	evShortLists = 3
	evShift      = 40
	evLong       = 1 << 59
	maxEvLists   = 1<<(59-evShift) - 1
)

// Memo slots: the top 3 bits are the handle's kind, the low slotBits its
// payload; a handle whose payload does not fit is kept in machine.wide
// and its slot is slotWide | its index there.
const (
	slotBits = 29
	slotMask = 1<<slotBits - 1
	slotWide = 7
)

// evHandle is the handle of event n of the list at evLists index ev; ok
// is false when none fits.
func evHandle(ev, n uint64) (h uint64, ok bool) {
	if ev < 1<<evShortLists && n < 1<<evShortShift {
		return hEvent<<hShift | ev<<evShortShift | n, true
	}
	if ev <= maxEvLists && n < 1<<evShift {
		return hEvent<<hShift | evLong | ev<<evShift | n, true
	}
	return 0, false
}

// handle encodes v as a memo handle, storing it in objs if it has no
// compact form.
func (m *machine) handle(v val) uint64 {
	switch x := v.x.(type) {
	case strRef:
		return hStr<<hShift | uint64(v.n)
	case frameRef:
		return hFrame<<hShift | uint64(v.n)
	case stackRef:
		return hStack<<hShift | uint64(v.n)
	case *evList:
		l := (*plist)(x)
		if l.evID == 0 && len(m.evLists) < maxEvLists+1 {
			m.evLists = append(m.evLists, l)
			l.evID = int32(len(m.evLists))
		}
		if l.evID > 0 && v.n >= 0 {
			if h, ok := evHandle(uint64(l.evID-1), uint64(v.n)); ok {
				return h
			}
		}
	case nil:
		if v.n >= 0 && v.n < hMask {
			return hInt<<hShift | uint64(v.n)
		}
	}
	i, _ := m.objs.put(v)
	// The memo keeps the object alive after the stack lets go of it: a
	// file of MEMOIZE and POP after each empty list would otherwise hold
	// 200 bytes for every 3 it has.
	m.budget.spend(valBytes + heldBytes(v))
	return hObj<<hShift | uint64(i)
}

// Sizes the budget charges for an object the memo holds (heldBytes).
var (
	plistBytes = int64(unsafe.Sizeof(plist{}))
	pdictBytes = int64(unsafe.Sizeof(pdict{}))
)

// heldBytes is what v holds beyond its val and the slots of its items
// (which appendTo, SETITEMS and DICT charge): the container itself, a
// tuple's items, a bytes value, a boxed float or wide integer.
func heldBytes(v val) int64 {
	switch x := v.x.(type) {
	case *plist:
		return plistBytes
	case *pdict:
		return pdictBytes
	case *ptuple:
		return 24 + int64(len(x.items))*valBytes
	case []byte:
		return 24 + int64(len(x))
	case *wideInt:
		return int64(unsafe.Sizeof(wideInt{})) + 16
	}
	return 16
}

// value decodes a memo handle.
func (m *machine) value(h uint64) (val, bool) {
	p := h & hMask
	switch h >> hShift {
	case hObj:
		return m.objs.items[p], true
	case hStr:
		return val{n: int64(p), x: strRef{}}, true
	case hFrame:
		return val{n: int64(p), x: frameRef{}}, true
	case hStack:
		return val{n: int64(p), x: stackRef{}}, true
	case hEvent:
		if p&evLong == 0 {
			return val{n: int64(p & (1<<evShortShift - 1)), x: (*evList)(m.evLists[p>>evShortShift])}, true
		}
		p &^= evLong
		return val{n: int64(p & (1<<evShift - 1)), x: (*evList)(m.evLists[p>>evShift])}, true
	case hInt:
		return val{n: int64(p)}, true
	}
	return val{}, false
}

// pack returns the memo slot of handle h, keeping h in wide when its
// payload does not fit the slot.
func (m *machine) pack(h uint64) uint32 {
	if p := h & hMask; p <= slotMask {
		return uint32(h>>hShift)<<slotBits | uint32(p)
	}
	i, grew := m.wide.put(h)
	if grew {
		m.budget.spend(8)
	}
	return slotWide<<slotBits | i
}

// unpack returns the handle of memo slot s.
func (m *machine) unpack(s uint32) uint64 {
	if s>>slotBits == slotWide {
		return m.wide.items[s&slotMask]
	}
	return uint64(s>>slotBits)<<hShift | uint64(s&slotMask)
}

// release frees what memo slot s holds in wide and objs before the slot
// is written again.
func (m *machine) release(s uint32) {
	h := uint64(s>>slotBits)<<hShift | uint64(s&slotMask)
	if s>>slotBits == slotWide {
		i := s & slotMask
		h = m.wide.items[i]
		m.wide.release(i)
	}
	if h>>hShift == hObj {
		m.objs.release(uint32(h & hMask))
	}
}

func (m *machine) memoPut(idx uint64, v val) {
	switch x := v.x.(type) {
	case *pdict:
		x.memo = int64(idx)
	case *plist:
		x.memo = int64(idx)
	}
	m.store(idx, v)
}

func (m *machine) store(idx uint64, v val) {
	if idx >= m.memoLen && idx < m.memoLen+denseMemoSlack {
		for m.memoLen <= idx {
			if m.memoLen%memoChunk == 0 {
				m.memo = append(m.memo, make([]uint32, memoChunk))
				m.budget.spend(memoChunk * 4)
			}
			m.memoLen++
		}
	}
	if idx < m.memoLen {
		slot := &m.memo[idx/memoChunk][idx%memoChunk]
		if k := *slot >> slotBits; k == hObj || k == slotWide {
			m.release(*slot)
		}
		*slot = m.pack(m.handle(v))
		return
	}
	if m.memoFar == nil {
		m.memoFar = map[uint64]val{}
	}
	m.memoFar[idx] = v
	m.budget.spend(64)
}

// replaceMemo swaps a converted object for its compact reference, so the
// object itself can be freed.
func (m *machine) replaceMemo(idx int64, v val) {
	if idx < 0 {
		return
	}
	if uint64(idx) < m.memoLen {
		m.store(uint64(idx), v)
	} else if _, ok := m.memoFar[uint64(idx)]; ok {
		m.memoFar[uint64(idx)] = v
	}
}

func (m *machine) memoGet(idx uint64) (val, error) {
	if idx < m.memoLen {
		s := m.memo[idx/memoChunk][idx%memoChunk]
		// Fast paths for the handles BINGET meets most: dict keys and
		// frames already converted.
		switch s >> slotBits {
		case hStr:
			return val{n: int64(s & slotMask), x: strRef{}}, nil
		case hFrame:
			return val{n: int64(s & slotMask), x: frameRef{}}, nil
		}
		if v, ok := m.value(m.unpack(s)); ok {
			addRef(v)
			return v, nil
		}
	} else if v, ok := m.memoFar[idx]; ok {
		addRef(v)
		return v, nil
	}
	return val{}, m.fail("malformed pickle: memo index %d was never stored", idx)
}

// pinned is the reference count of an object referenced so often that
// its count saturated: it is never released nor recycled (a count that
// wrapped would hand a dict still in use to the next one built).
const pinned = math.MaxInt32

func addRef(v val) {
	switch x := v.x.(type) {
	case *pdict:
		if x.refs < pinned {
			x.refs++
		}
	case *plist:
		if x.refs < pinned {
			x.refs++
		}
	}
}

// recycleDict and recycleList take back a converted object that nothing
// else refers to (its memo slot already holds the compact reference).
func (m *machine) recycleDict(d *pdict) {
	if d.refs == pinned {
		return
	}
	if d.refs > 0 {
		d.refs--
		return
	}
	if !d.recycled && d.memo >= 0 {
		d.recycled = true
		m.free = append(m.free, d)
		if m.conv != nil {
			delete(m.conv.framesByPtr, d)
		}
	}
}

func (m *machine) recycleList(l *plist) {
	if l.refs == pinned {
		return
	}
	if l.refs > 0 {
		l.refs--
		return
	}
	if !l.recycled && l.memo >= 0 && !l.evMode {
		l.recycled = true
		m.freeL = append(m.freeL, l)
	}
}

func (m *machine) newList() *plist {
	if n := len(m.freeL); n > 0 {
		l := m.freeL[n-1]
		m.freeL = m.freeL[:n-1]
		*l = plist{items: l.items[:0], memo: -1}
		return l
	}
	return &plist{memo: -1}
}

func (m *machine) newDict() *pdict {
	if n := len(m.free); n > 0 {
		d := m.free[n-1]
		m.free = m.free[:n-1]
		d.kv = d.kv[:0]
		d.memo = -1
		d.recycled = false
		return d
	}
	return &pdict{memo: -1}
}

// appendTo appends items to a list, converting trace-entry dicts on the way.
func (m *machine) appendTo(l *plist, items []val) {
	if len(items) > 0 && len(l.items) == 0 && l.evLen == 0 && !l.evMode {
		l.evMode = m.pool.isEntry(items[0])
	}
	if !l.evMode {
		if l.stack > 0 {
			// More frames after the list was converted (a stack of over
			// 1000 frames comes in several APPENDS): convert it anew.
			for _, f := range m.conv.s.Stacks[l.stack-1] {
				l.items = append(l.items, val{n: int64(f), x: frameRef{}})
			}
			l.stack = 0
			m.replaceMemo(l.memo, val{x: l})
		}
		c := cap(l.items)
		l.items = append(l.items, items...)
		if cap(l.items) != c {
			m.budget.spend(int64(cap(l.items)-c) * valBytes)
		}
		return
	}
	for _, it := range items {
		switch x := it.x.(type) {
		case *pdict:
			if m.pool.isEntry(it) {
				m.conv.entryIndex = l.evLen
				i := m.addEvent(l, m.conv.entry(x))
				m.replaceMemo(x.memo, val{n: int64(i), x: (*evList)(l)})
				m.recycleDict(x)
				continue
			}
		case *evList:
			m.addEvent(l, (*plist)(x).event(it.n))
			continue
		}
		if l.evError == nil {
			l.evError = fmt.Errorf("item %d is a %s, not a trace entry dict", l.evLen, it.typeName())
		}
	}
}

// run executes the pickle until STOP and returns the top-level value.
func (m *machine) run() (val, error) {
	for {
		if len(m.stack) > m.lim.MaxStack || len(m.marks) > m.lim.MaxStack {
			return val{}, m.checkStack()
		}
		if m.budget.err != nil {
			return val{}, m.budget.err
		}
		op, err := m.readByte()
		if err != nil {
			if m.off == 0 {
				return val{}, &pickleError{msg: "empty file", err: io.ErrUnexpectedEOF}
			}
			return val{}, err
		}
		if op == '.' { // STOP
			return m.pop()
		}
		if err := m.step(op); err != nil {
			return val{}, err
		}
	}
}

// step runs one opcode other than STOP, by family.
func (m *machine) step(op byte) error {
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
// batch of trace entries takes the fast path), POP, POP_MARK, DUP.
func (m *machine) opStack(op byte) error {
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
			// A batch of trace entries takes the fast path
			// (pickle_fast.go) where it can.
			if l, ok := m.stack[n-1].x.(*plist); ok && m.fastTarget(l) && m.fastBatch(l) {
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
func (m *machine) opScalar(op byte) error {
	switch op {
	case 'N':
		m.push(val{x: noneT{}})
	case 0x88:
		m.push(val{x: boolT(true)})
	case 0x89:
		m.push(val{x: boolT(false)})
	case 'J': // BININT
		b, err := m.readN(4)
		if err != nil {
			return err
		}
		m.push(val{n: int64(int32(binary.LittleEndian.Uint32(b)))})
	case 'K': // BININT1
		b, err := m.readByte()
		if err != nil {
			return err
		}
		m.push(val{n: int64(b)})
	case 'M': // BININT2
		b, err := m.readN(2)
		if err != nil {
			return err
		}
		m.push(val{n: int64(binary.LittleEndian.Uint16(b))})
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
		m.push(decodeLong(b))
	case 'G': // BINFLOAT
		b, err := m.readN(8)
		if err != nil {
			return err
		}
		m.push(val{x: math.Float64frombits(binary.BigEndian.Uint64(b))})
	}
	return nil
}

// opString pushes a str (interned) or a bytes value: SHORT_BINUNICODE,
// BINUNICODE, BINUNICODE8, the Python 2 SHORT_BINSTRING and BINSTRING,
// SHORT_BINBYTES, BINBYTES, BINBYTES8.
func (m *machine) opString(op byte) error {
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
		m.push(val{x: b})
	}
	return nil
}

// opBuild pushes a new container: EMPTY_DICT, EMPTY_LIST, EMPTY_TUPLE, and
// DICT, LIST, TUPLE, TUPLE1-3 from the stack.
func (m *machine) opBuild(op byte) error {
	switch op {
	case '}': // EMPTY_DICT
		m.push(val{x: m.newDict()})
	case ']': // EMPTY_LIST
		m.push(val{x: m.newList()})
	case ')': // EMPTY_TUPLE
		m.push(val{x: &ptuple{}})
	case 'd': // DICT
		items, err := m.popMark()
		if err != nil {
			return err
		}
		if len(items)%2 != 0 {
			return m.fail("malformed pickle: DICT with an odd number of items")
		}
		d := &pdict{memo: -1, kv: append([]val(nil), items...)}
		m.budget.spend(int64(len(items)) * valBytes)
		m.push(val{x: d})
	case 'l': // LIST
		items, err := m.popMark()
		if err != nil {
			return err
		}
		l := &plist{memo: -1}
		cp := append([]val(nil), items...)
		m.appendTo(l, cp)
		m.push(val{x: l})
	case 't': // TUPLE
		items, err := m.popMark()
		if err != nil {
			return err
		}
		m.push(val{x: &ptuple{items: append([]val(nil), items...)}})
		m.budget.spend(int64(len(items)) * valBytes)
	case 0x85, 0x86, 0x87: // TUPLE1, TUPLE2, TUPLE3
		k := int(op - 0x84)
		if len(m.stack) < k || (len(m.marks) > 0 && m.marks[len(m.marks)-1] > len(m.stack)-k) {
			return m.fail("malformed pickle: stack underflow")
		}
		t := &ptuple{items: append([]val(nil), m.stack[len(m.stack)-k:]...)}
		m.stack = m.stack[:len(m.stack)-k]
		m.push(val{x: t})
	}
	return nil
}

// opFill adds to the container under the top of the stack: APPEND, APPENDS,
// SETITEM, SETITEMS.
func (m *machine) opFill(op byte) error {
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
		m.appendTo(l, []val{v})
	case 'e': // APPENDS
		items, err := m.popMark()
		if err != nil {
			return err
		}
		l, err := m.topList("APPENDS")
		if err != nil {
			return err
		}
		m.appendTo(l, items)
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
		c := cap(d.kv)
		d.kv = append(d.kv, k, v)
		if cap(d.kv) != c {
			m.budget.spend(int64(cap(d.kv)-c) * valBytes)
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
		c := cap(d.kv)
		d.kv = append(d.kv, items...)
		if cap(d.kv) != c {
			m.budget.spend(int64(cap(d.kv)-c) * valBytes)
		}
	}
	return nil
}

// opMemo stores to the memo (MEMOIZE, BINPUT, LONG_BINPUT) and pushes from
// it (BINGET, LONG_BINGET).
func (m *machine) opMemo(op byte) error {
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

// opRefused fails on the opcodes no memory snapshot holds: those that name
// Python classes or build objects, sets, and unknown opcodes.
func (m *machine) opRefused(op byte) error {
	switch op {
	case 'c': // GLOBAL
		mod, _ := m.readLine()
		name, _ := m.readLine()
		return m.failNot("the pickle refers to the Python class %s.%s", mod, name)
	case 0x93: // STACK_GLOBAL
		name, _ := m.pop()
		mod, _ := m.pop()
		ms, _ := m.pool.str(mod)
		ns, _ := m.pool.str(name)
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
func (m *machine) readMemoIndex(short bool) (uint64, error) {
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

func (m *machine) readLen(op byte) (uint64, error) {
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

func (m *machine) readLine() (string, error) {
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
