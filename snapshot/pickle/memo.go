package pickle

import (
	"math"
	"unsafe"
)

// A memo handle is 8 bytes: the top 4 bits are the kind, the rest the
// payload. The memo itself keeps each handle in a 4-byte slot (see
// Machine.pack), so that a file with millions of memoized records
// keeps a small, pointer-free memo.
const (
	hUnset   = 0
	hObj     = 1 // payload: index in Machine.objs
	hStr     = 2 // payload: string pool index
	hDictRef = 3 // payload: the DictRef's number
	hListRef = 4 // payload: the ListRef's number
	// hEvent (an Item)'s payload is short, evLists index << evShortShift
	// | record index, when the list is one of the first 1<<evShortLists
	// and the index below 1<<evShortShift (a few record lists of under
	// 67M records each: it then fits a slot); else long, evLong | evLists
	// index << evShift | record index.
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
// payload; a handle whose payload does not fit is kept in Machine.wide
// and its slot is slotWide | its index there.
const (
	slotBits = 29
	slotMask = 1<<slotBits - 1
	slotWide = 7
)

// evHandle is the handle of record n of the list at evLists index ev; ok
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
func (m *Machine) handle(v Value) uint64 {
	switch x := v.X.(type) {
	case Str:
		return hStr<<hShift | uint64(v.N)
	case DictRef:
		return hDictRef<<hShift | uint64(v.N)
	case ListRef:
		return hListRef<<hShift | uint64(v.N)
	case *Item:
		l := (*List)(x)
		if l.evID == 0 && len(m.evLists) < maxEvLists+1 {
			m.evLists = append(m.evLists, l)
			l.evID = int32(len(m.evLists))
		}
		if l.evID > 0 && v.N >= 0 {
			if h, ok := evHandle(uint64(l.evID-1), uint64(v.N)); ok {
				return h
			}
		}
	case nil:
		if v.N >= 0 && v.N < hMask {
			return hInt<<hShift | uint64(v.N)
		}
	}
	i, _ := m.objs.put(v)
	// The memo keeps the object alive after the stack lets go of it: a
	// file of MEMOIZE and POP after each empty list would otherwise hold
	// 200 bytes for every 3 it has.
	m.budget.Spend(ValueBytes + heldBytes(v))
	return hObj<<hShift | uint64(i)
}

// Sizes the budget charges for an object the memo holds (heldBytes).
var (
	plistBytes = int64(unsafe.Sizeof(List{}))
	pdictBytes = int64(unsafe.Sizeof(Dict{}))
)

// heldBytes is what v holds beyond its val and the slots of its items
// (which appendTo, SETITEMS and DICT charge): the container itself, a
// tuple's items, a bytes value, a boxed float or wide integer.
func heldBytes(v Value) int64 {
	switch x := v.X.(type) {
	case *List:
		return plistBytes
	case *Dict:
		return pdictBytes
	case *Tuple:
		return 24 + int64(len(x.Items))*ValueBytes
	case []byte:
		return 24 + int64(len(x))
	case *WideInt:
		return int64(unsafe.Sizeof(WideInt{})) + 16
	}
	return 16
}

// value decodes a memo handle.
func (m *Machine) value(h uint64) (Value, bool) {
	p := h & hMask
	switch h >> hShift {
	case hObj:
		return m.objs.items[p], true
	case hStr:
		return Value{N: int64(p), X: Str{}}, true
	case hDictRef:
		return Value{N: int64(p), X: DictRef{}}, true
	case hListRef:
		return Value{N: int64(p), X: ListRef{}}, true
	case hEvent:
		if p&evLong == 0 {
			return Value{N: int64(p & (1<<evShortShift - 1)), X: (*Item)(m.evLists[p>>evShortShift])}, true
		}
		p &^= evLong
		return Value{N: int64(p & (1<<evShift - 1)), X: (*Item)(m.evLists[p>>evShift])}, true
	case hInt:
		return Value{N: int64(p)}, true
	}
	return Value{}, false
}

// pack returns the memo slot of handle h, keeping h in wide when its
// payload does not fit the slot.
func (m *Machine) pack(h uint64) uint32 {
	if p := h & hMask; p <= slotMask {
		return uint32(h>>hShift)<<slotBits | uint32(p)
	}
	i, grew := m.wide.put(h)
	if grew {
		m.budget.Spend(8)
	}
	return slotWide<<slotBits | i
}

// unpack returns the handle of memo slot s.
func (m *Machine) unpack(s uint32) uint64 {
	if s>>slotBits == slotWide {
		return m.wide.items[s&slotMask]
	}
	return uint64(s>>slotBits)<<hShift | uint64(s&slotMask)
}

// release frees what memo slot s holds in wide and objs before the slot
// is written again.
func (m *Machine) release(s uint32) {
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

func (m *Machine) memoPut(idx uint64, v Value) {
	switch x := v.X.(type) {
	case *Dict:
		x.memo = int64(idx)
	case *List:
		x.memo = int64(idx)
	}
	m.store(idx, v)
}

func (m *Machine) store(idx uint64, v Value) {
	if idx >= m.memoLen && idx < m.memoLen+denseMemoSlack {
		for m.memoLen <= idx {
			if m.memoLen%memoChunk == 0 {
				m.memo = append(m.memo, make([]uint32, memoChunk))
				m.budget.Spend(memoChunk * 4)
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
		m.memoFar = map[uint64]Value{}
	}
	m.memoFar[idx] = v
	m.budget.Spend(64)
}

// ReplaceMemo swaps the object at memo index idx (Dict.Memo, List.Memo;
// -1: none) for v, its converted reference (a DictRef or ListRef), so the
// object itself can be freed.
func (m *Machine) ReplaceMemo(idx int64, v Value) {
	if idx < 0 {
		return
	}
	if uint64(idx) < m.memoLen {
		m.store(uint64(idx), v)
	} else if _, ok := m.memoFar[uint64(idx)]; ok {
		m.memoFar[uint64(idx)] = v
	}
}

func (m *Machine) memoGet(idx uint64) (Value, error) {
	if idx < m.memoLen {
		s := m.memo[idx/memoChunk][idx%memoChunk]
		// Fast paths for the handles BINGET meets most: dict keys and
		// dicts already converted (a snapshot's frames).
		switch s >> slotBits {
		case hStr:
			return Value{N: int64(s & slotMask), X: Str{}}, nil
		case hDictRef:
			return Value{N: int64(s & slotMask), X: DictRef{}}, nil
		}
		if v, ok := m.value(m.unpack(s)); ok {
			addRef(v)
			return v, nil
		}
	} else if v, ok := m.memoFar[idx]; ok {
		addRef(v)
		return v, nil
	}
	return Value{}, m.fail("malformed pickle: memo index %d was never stored", idx)
}

// pinned is the reference count of an object referenced so often that
// its count saturated: it is never released nor recycled (a count that
// wrapped would hand a dict still in use to the next one built).
const pinned = math.MaxInt32

func addRef(v Value) {
	switch x := v.X.(type) {
	case *Dict:
		if x.refs < pinned {
			x.refs++
		}
	case *List:
		if x.refs < pinned {
			x.refs++
		}
	}
}

// RecycleDict and RecycleList take back a converted object, once nothing
// else refers to it (its memo slot already holds the compact reference):
// each call lets one reference go.
func (m *Machine) RecycleDict(d *Dict) {
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
			m.conv.Forget(d)
		}
	}
}

// RecycleList is RecycleDict for a list; a record list is never recycled.
func (m *Machine) RecycleList(l *List) {
	if l.refs == pinned {
		return
	}
	if l.refs > 0 {
		l.refs--
		return
	}
	if !l.recycled && l.memo >= 0 && !l.records {
		l.recycled = true
		m.freeL = append(m.freeL, l)
	}
}

func (m *Machine) newList() *List {
	if n := len(m.freeL); n > 0 {
		l := m.freeL[n-1]
		m.freeL = m.freeL[:n-1]
		*l = List{Items: l.Items[:0], memo: -1}
		return l
	}
	return &List{memo: -1}
}

func (m *Machine) newDict() *Dict {
	if n := len(m.free); n > 0 {
		d := m.free[n-1]
		m.free = m.free[:n-1]
		d.KV = d.KV[:0]
		d.memo = -1
		d.recycled = false
		return d
	}
	return &Dict{memo: -1}
}
