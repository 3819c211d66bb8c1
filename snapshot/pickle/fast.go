package pickle

import (
	"encoding/binary"
	"unicode/utf8"
)

// This file is the batch reader, the machine's fast path for the bulk of a
// file: the batches of records Python's pickler writes as
//
//	MARK {EMPTY_DICT [put] MARK (key value)... SETITEMS}... APPENDS
//
// onto a record list (a snapshot's trace entries onto a device's trace),
// with keys and nested dicts mostly memo references (BINGET/LONG_BINGET)
// and values small ints, short strings and lists of small dicts (a trace
// entry's frames). fastBatch reads such a batch straight from the read
// buffer into Records, with no pickle stack, no dict objects and no opcode
// dispatch per value, and hands them to the BatchConverter in one call.
//
// It is speculative: the whole batch, up to its APPENDS, must be in the
// buffer and of that shape (the keys of the Schema, values of the kinds it
// gives, sequential memo puts, no reference to a dict of the batch itself).
// Anything else, and the batch is left untouched for the generic machine
// (Machine.Run), which then reads it op by op. The scan changes no state
// the generic machine reads until the batch is accepted: memo puts go to an
// overlay, and what the generic path does to older memo slots when it
// converts (a dict or a list memoised before the records, e.g. a
// snapshot's frames in its segments, becomes a compact reference) is
// recorded and replayed at commit (BatchConverter.Old). Only interning
// (strings in the pool, and what the BatchConverter's Str, Dict and List
// intern) happens during the scan; it is by content, so a batch given up
// leaves at most unused table rows that nothing refers to.
//
// snapshot's differential test against gopickle, its fast-versus-generic
// test (snapshot/fastpath_test.go) and FuzzDecode keep the two paths
// equal; TestRecords does for a Converter of its own.

// MaxSlots is the most slots of a Record: a Schema has at most
// MaxSlots-1 record keys and as many keys of the nested dicts.
const MaxSlots = 10

// Kind is how the batch reader reads the value of a slot.
type Kind uint8

const (
	// KindNone: not a slot; for a key of the nested dicts, a str or None
	// that is read and dropped.
	KindNone Kind = iota
	// KindInt: an int of at most 64 bits (BININT1, BININT2, BININT, LONG1
	// of up to 8 bytes, or a memo reference to one); the slot holds it.
	KindInt
	// KindStr: a str; the slot holds what BatchConverter.Str makes of
	// it. For a key of the nested dicts, a str or None: the slot holds
	// its pool index, -1 for None.
	KindStr
	// KindList: a list of nested dicts, or a memo reference to one; the
	// slot holds BatchConverter.List's number for it.
	KindList
)

// Key is a key of a Schema and the kind of its value.
type Key struct {
	Name string
	Kind Kind
}

// Schema is what the batch reader may read: the record keys and the keys
// of the dicts nested in their KindList values. A record's slot i holds
// the value of Keys[i]; Keys[0] is unused, as is Sub[0]. A record without
// Config.RecordKey, a key not in the schema, or a value of another kind
// leaves the batch to the generic machine.
type Schema struct {
	Keys []Key
	Sub  []Key
}

// Record is one record dict (or nested dict) the batch reader read: bit i
// of Has is set when slot i was present, and V[i] is its value (0 when
// absent).
type Record struct {
	Has uint16
	V   [MaxSlots]int64
}

// A BatchConverter converts what the batch reader reads.
type BatchConverter interface {
	// Str converts the str at pool index s, the value of record slot
	// slot; ok false leaves the batch to the generic machine (a value
	// the consumer wants it to see, such as an unknown action).
	Str(slot int, s int64) (n int64, ok bool)
	// Dict converts a nested dict, read as r (Schema.Sub's slots), and
	// returns its DictRef number.
	Dict(r Record) int64
	// List converts a list of nested dicts, refs being their DictRef
	// numbers, and returns its ListRef number.
	List(refs []int64) int64
	// Old converts, as the generic machine would (its memo slot swapped,
	// references let go), a dict d or list l memoised before the batch
	// that a KindList value of the batch holds or is. It is called when
	// the batch is committed.
	Old(d *Dict, l *List)
	// Record converts record i of the batch being read, r (reused for
	// the next: what is kept must be copied). The batch may still be
	// given up; the next batch starts again at i == 0.
	Record(i int, r *Record)
	// Batch appends the n records of the batch just read, as Record
	// converted them, to record list l; counts holds how many records
	// had each slot.
	Batch(l *List, n int, counts *[MaxSlots]int)
}

// hPend is an overlay handle for an object of the batch not yet known as
// anything else: a record dict (payload: its index in the batch) or a
// nested dict or list still being read (payload: 1<<59). A reference to one
// gives the batch up.
const (
	hPend    = 7
	pendSelf = 1 << 59
)

// fastWant is how many bytes fastBatch tries to have buffered before a
// scan: PyTorch's batches of 1000 trace entries take 70 to 300 KB.
const fastWant = 512 << 10

// keepStr remembers the SHORT_BINUNICODE at b[q], if it is one, as the last
// string of record slot slot: its pool index and what Str made of it.
func (f *fastDecoder) keepStr(b []byte, q int, slot uint8, pool int64, n int64) {
	q = frameSkip(b, q)
	if q+1 >= len(b) || b[q] != 0x8c {
		return
	}
	sc := &f.strCache[slot]
	sc.s = append(sc.s[:0], b[q+2:q+2+int(b[q+1])]...)
	sc.pool, sc.n = pool, n
}

// fastCached is a memo reference (idx; noRef: none) and what it gave.
type fastCached struct {
	idx  uint64
	v    int64
	kind uint8
}

const noRef = 1 << 40

// refAt returns the index of the BINGET or LONG_BINGET at b[p] and its
// length; n is 0 for another opcode.
func refAt(b []byte, p int) (idx uint64, n int) {
	if p+4 < len(b) && b[p] == 'j' {
		return uint64(binary.LittleEndian.Uint32(b[p+1:])), 5
	}
	if p+1 < len(b) && b[p] == 'h' {
		return uint64(b[p+1]), 2
	}
	return noRef, 0
}

// fastAction is a conversion the generic path would make of an object
// memoised before the batch, replayed at commit: convert nested dict d,
// or list l.
type fastAction struct {
	d *Dict
	l *List
}

// fastDecoder is the batch reader's state, kept in the machine between
// batches so its buffers are reused.
type fastDecoder struct {
	ready bool
	// keySlot and subSlot give, by pool index, the slot of a record key
	// and of a nested dict's key (0: none); kinds and subKinds, by slot,
	// their Kind; need is the slot of Config.RecordKey.
	keySlot  []uint8
	subSlot  []uint8
	kinds    [MaxSlots]Kind
	subKinds [MaxSlots]Kind
	need     uint8
	memo0    uint64   // the machine's memoLen when the batch began
	overlay  []uint64 // handles of memo indexes memo0, memo0+1, ...
	nrec     int      // records read in the batch
	rec      Record   // the record being read
	actions  []fastAction
	counts   [MaxSlots]int
	refs     []int64
	// last and lastIdx: the last short string interned and its pool index
	// (a snapshot's compile_context "N/A" comes as a new string in every
	// entry).
	last    []byte
	lastIdx int64
	// keyCache remembers, by a pair's position in a record, the memo
	// reference of its key and the key's slot; valCache, by memo index,
	// what a reference as a value converted to. They hold for one batch:
	// the memo slots below memo0 and those of the overlay do not change
	// within it.
	keyCache [16]fastCached
	valCache [64]fastCached
	// strCache is, by slot, the last SHORT_BINUNICODE value read and its
	// pool index and conversion.
	strCache [MaxSlots]struct {
		s    []byte
		pool int64
		n    int64
	}
	// taken and given count the batches read here and those left to the
	// generic path (tests check that the batch reader is used).
	taken, given int
}

// setup builds the key tables from the schema.
func (f *fastDecoder) setup(m *Machine) {
	f.ready = true
	table := func(keys []Key, kinds *[MaxSlots]Kind) []uint8 {
		var t []uint8
		for slot, k := range keys {
			if slot == 0 || slot >= MaxSlots {
				continue
			}
			i := m.pool.Add(k.Name)
			for int64(len(t)) <= i {
				t = append(t, 0)
			}
			t[i] = uint8(slot)
			kinds[slot] = k.Kind
		}
		return t
	}
	f.keySlot = table(m.cfg.Schema.Keys, &f.kinds)
	f.subSlot = table(m.cfg.Schema.Sub, &f.subKinds)
	if m.recordKey < int64(len(f.keySlot)) {
		f.need = f.keySlot[m.recordKey]
	}
	f.lastIdx = -1
}

// fastTarget reports whether a MARK read with l on top of the stack may
// start a batch of records for l: the machine has a Schema, l takes
// records (it is a record list, or empty and unconverted, so that its
// first item decides) and no mark hides it.
func (m *Machine) fastTarget(l *List) bool {
	if m.cfg.Schema == nil || m.conv == nil {
		return false
	}
	if !l.records && (len(l.Items) != 0 || l.nrec != 0 || l.Ref != 0) {
		return false
	}
	return len(m.marks) == 0 || m.marks[len(m.marks)-1] < len(m.stack)
}

// fillSome reads until want bytes are buffered, the buffer is full or the
// source fails; a failure is kept for the generic path to report.
func (m *Machine) fillSome(want int) {
	if m.buf == nil {
		return
	}
	if len(m.buf)-m.rp < want {
		copy(m.buf, m.buf[m.rp:m.wp])
		m.wp -= m.rp
		m.rp = 0
	}
	for m.wp-m.rp < want && m.wp < len(m.buf) && m.srcErr == nil {
		k, err := m.src.Read(m.buf[m.wp:])
		m.wp += k
		if err != nil {
			m.srcErr = err
		}
	}
}

// fastBatch is called after a MARK with list l on top of the stack (see
// fastTarget). It reads the batch up to its APPENDS and appends the
// records to l, as the generic machine would; it returns false, having
// changed nothing the generic machine reads, when the batch is not of the
// usual shape.
func (m *Machine) fastBatch(l *List) bool {
	f := &m.fast
	if !f.ready {
		f.setup(m)
	}
	if f.need == 0 {
		return false
	}
	if m.wp-m.rp < fastWant && m.srcErr == nil {
		m.fillSome(fastWant)
	}
	f.memo0 = m.memoLen
	f.overlay = f.overlay[:0]
	f.nrec = 0
	f.actions = f.actions[:0]
	f.counts = [MaxSlots]int{}
	for i := range f.keyCache {
		f.keyCache[i] = fastCached{idx: noRef}
	}
	for i := range f.valCache {
		f.valCache[i] = fastCached{idx: noRef}
	}
	b := m.buf[m.rp:m.wp]
	// The generic machine fails at a stack of more than MaxStack values;
	// a batch of len(b) bytes pushes fewer than len(b), so below this
	// the fast path cannot miss that error.
	if len(m.stack)+len(m.marks)+len(b) >= m.cfg.MaxStack {
		b = b[:max(0, m.cfg.MaxStack-len(m.stack)-len(m.marks)-1)]
	}
	n, ok := f.scan(m, b)
	if !ok {
		f.given++
		return false
	}
	f.taken++
	m.rp += n
	m.off += int64(n)
	f.commit(m, l)
	return true
}

// commit applies a scanned batch: the records, the memo puts, the
// conversions of older objects.
func (f *fastDecoder) commit(m *Machine, l *List) {
	l.records = true
	base := l.nrec
	m.conv.Batch(l, f.nrec, &f.counts)
	l.nrec += f.nrec
	// The handle of record i is evH + i when the list has an evLists
	// slot and the first and last records' handles have the same form
	// (see evHandle).
	evH := m.handle(Value{N: int64(base), X: (*Item)(l)})
	if evH>>hShift == hObj {
		m.objs.release(uint32(evH & hMask))
	}
	if evH>>hShift != hEvent {
		evH = 0
	} else if h, ok := evHandle(uint64(l.evID-1), uint64(l.nrec-1)); !ok || h != evH+uint64(l.nrec-1-base) {
		evH = 0
	}
	for j, h := range f.overlay {
		idx := f.memo0 + uint64(j)
		if h>>hShift == hPend {
			if evH != 0 {
				h = evH + h&hMask
			} else {
				m.store(idx, Value{N: int64(base) + int64(h&hMask), X: (*Item)(l)})
				continue
			}
		}
		if idx == m.memoLen && idx%memoChunk != 0 {
			// A fresh slot of the last chunk: what store does, without
			// decoding and encoding the handle.
			m.memo[idx/memoChunk][idx%memoChunk] = m.pack(h)
			m.memoLen++
			continue
		}
		v, _ := m.value(h)
		m.store(idx, v)
	}
	// The generic machine takes a reference to each older object at its
	// BINGET, all before the APPENDS that converts the records; then,
	// record by record, it converts a list or a dict of a new list and
	// lets the reference go (RecycleDict), so that a dict is recycled
	// only when nothing converts it again.
	for _, a := range f.actions {
		if a.d != nil {
			addRef(Value{X: a.d})
		} else {
			addRef(Value{X: a.l})
		}
	}
	for _, a := range f.actions {
		m.conv.Old(a.d, a.l)
		if a.d != nil {
			m.RecycleDict(a.d)
		}
	}
}

// get returns the memo handle of idx as the batch sees it; 0 (hUnset) when
// it is not in the dense memo or the overlay.
func (f *fastDecoder) get(m *Machine, idx uint64) uint64 {
	if idx < f.memo0 {
		return m.unpack(m.memo[idx/memoChunk][idx%memoChunk])
	}
	if j := idx - f.memo0; j < uint64(len(f.overlay)) {
		return f.overlay[j]
	}
	return hUnset
}

// memoRef reads a BINGET or LONG_BINGET at b[p] and returns the handle and
// the position after it; ok is false for another opcode or a short buffer.
func (f *fastDecoder) memoRef(m *Machine, b []byte, p int) (h uint64, q int, ok bool) {
	p = frameSkip(b, p)
	if p+1 < len(b) && b[p] == 'h' {
		return f.get(m, uint64(b[p+1])), p + 2, true
	}
	if p+4 < len(b) && b[p] == 'j' {
		return f.get(m, uint64(binary.LittleEndian.Uint32(b[p+1:]))), p + 5, true
	}
	return 0, p, false
}

// put reads an optional MEMOIZE, BINPUT or LONG_BINPUT at b[p] and puts h
// in the overlay. A put of another index than the next one (the pickler
// numbers them in order), or two puts in a row, give the batch up.
func (f *fastDecoder) put(b []byte, p int, h uint64) (int, bool) {
	if p >= len(b) {
		return p, false
	}
	next := f.memo0 + uint64(len(f.overlay))
	switch b[p] {
	case 0x94:
		p++
	case 'q':
		if p+1 >= len(b) || uint64(b[p+1]) != next {
			return p, false
		}
		p += 2
	case 'r':
		if p+4 >= len(b) || uint64(binary.LittleEndian.Uint32(b[p+1:])) != next {
			return p, false
		}
		p += 5
	default:
		return p, true
	}
	f.overlay = append(f.overlay, h)
	if p < len(b) && (b[p] == 0x94 || b[p] == 'q' || b[p] == 'r') {
		return p, false
	}
	return p, true
}

// str reads a string value at b[p]: a memo reference to a str, or a
// SHORT_BINUNICODE or BINUNICODE (interned, with its optional put). It
// returns the string's pool index.
func (f *fastDecoder) str(m *Machine, b []byte, p int) (int64, int, bool) {
	p = frameSkip(b, p)
	if p >= len(b) {
		return 0, p, false
	}
	var s []byte
	switch b[p] {
	case 'h', 'j':
		h, q, ok := f.memoRef(m, b, p)
		if !ok || h>>hShift != hStr {
			return 0, p, false
		}
		return int64(h & hMask), q, true
	case 0x8c:
		if p+1 >= len(b) {
			return 0, p, false
		}
		n := int(b[p+1])
		if p+2+n > len(b) {
			return 0, p, false
		}
		if int64(n) > m.cfg.MaxString {
			return 0, p, false
		}
		s = b[p+2 : p+2+n]
		p += 2 + n
	case 'X':
		if p+4 >= len(b) {
			return 0, p, false
		}
		n := uint64(binary.LittleEndian.Uint32(b[p+1:]))
		if uint64(p)+5+n > uint64(len(b)) || n > uint64(m.cfg.MaxString) {
			return 0, p, false
		}
		s = b[p+5 : p+5+int(n)]
		p += 5 + int(n)
	default:
		return 0, p, false
	}
	var idx int64
	if f.lastIdx >= 0 && string(s) == string(f.last) {
		idx = f.lastIdx
	} else {
		if !utf8.Valid(s) {
			return 0, p, false
		}
		idx = m.pool.AddBytes(s).N
		if len(s) <= 64 {
			f.last = append(f.last[:0], s...)
			f.lastIdx = idx
		}
	}
	p, ok := f.put(b, p, hStr<<hShift|uint64(idx))
	return idx, p, ok
}

// integer reads an int value at b[p]: BININT1, BININT2, BININT, LONG1 of up
// to 8 bytes, or a memo reference to a small int.
func (f *fastDecoder) integer(m *Machine, b []byte, p int) (int64, int, bool) {
	p = frameSkip(b, p)
	if p+1 >= len(b) {
		return 0, p, false
	}
	switch b[p] {
	case 'K':
		return int64(b[p+1]), p + 2, true
	case 'M':
		if p+2 >= len(b) {
			return 0, p, false
		}
		return int64(binary.LittleEndian.Uint16(b[p+1:])), p + 3, true
	case 'J':
		if p+4 >= len(b) {
			return 0, p, false
		}
		return int64(int32(binary.LittleEndian.Uint32(b[p+1:]))), p + 5, true
	case 0x8a:
		n := int(b[p+1])
		if n > 8 || p+2+n > len(b) {
			return 0, p, false
		}
		return DecodeLong(b[p+2 : p+2+n]).N, p + 2 + n, true
	case 'h', 'j':
		h, q, ok := f.memoRef(m, b, p)
		if !ok || h>>hShift != hInt {
			return 0, p, false
		}
		return int64(h & hMask), q, true
	}
	return 0, p, false
}

// scan reads one batch from b, which starts after the batch's MARK, and
// returns the bytes it takes up to and including its APPENDS.
//
// It is longer than the package's other functions (about 135 lines) on
// purpose: it is the inner loop that reads every record of a file (2
// million trace entries in snapview's benchmark snapshot), one state
// machine over the record's keys whose states share the position p, the
// record being built and the batch's bounds; split into functions, each
// would take and return them all. Its parts that are not per-key (ints,
// strings, memo references, nested lists and dicts) are already functions
// of their own.
func (f *fastDecoder) scan(m *Machine, b []byte) (int, bool) {
	keys := f.keySlot
	p := 0
	for {
		if p >= len(b) {
			return 0, false
		}
		switch b[p] {
		case 0x95:
			p = frameSkip(b, p)
			continue
		case 'e':
			if f.nrec == 0 {
				return 0, false
			}
			return p + 1, true
		case '}':
			p++
		default:
			return 0, false
		}
		var ok bool
		if p, ok = f.put(b, p, hPend<<hShift|uint64(f.nrec)); !ok {
			return 0, false
		}
		e := &f.rec
		*e = Record{}
		// One or more MARK (key value)... SETITEMS groups; j is the
		// pair's position in the record, for the caches.
		j := 0
		for p < len(b) && b[p] == '(' {
			p++
			for ; ; j++ {
				if p >= len(b) {
					return 0, false
				}
				if b[p] == 'u' {
					p++
					break
				}
				// The key: most often the memo reference the record
				// before had at this position.
				var slot uint8
				kc := &f.keyCache[j&(len(f.keyCache)-1)]
				if idx, n := refAt(b, p); n > 0 && idx == kc.idx {
					slot = kc.kind
					p += n
				} else {
					var k int64
					if k, p, ok = f.str(m, b, p); !ok || k >= int64(len(keys)) || keys[k] == 0 {
						return 0, false
					}
					slot = keys[k]
					if n > 0 {
						*kc = fastCached{idx: idx, kind: slot}
					}
				}
				f.counts[slot]++
				var n int64
				switch f.kinds[slot] {
				case KindInt:
					if p+9 < len(b) && b[p] == 0x8a && b[p+1] <= 8 {
						// LONG1 (addresses, times): read 8 bytes, keep n.
						k := uint(b[p+1])
						u := binary.LittleEndian.Uint64(b[p+2:])
						if k == 0 {
							u = 0
						} else if k < 8 {
							sh := 64 - 8*k
							u = uint64(int64(u<<sh) >> sh)
						}
						n = int64(u)
						p += 2 + int(k)
					} else if n, p, ok = f.integer(m, b, p); !ok {
						return 0, false
					}
				case KindStr, KindList:
					// The value: a memo reference seen at this position
					// before, or read and converted.
					idx, r := refAt(b, p)
					vc := &f.valCache[idx&(uint64(len(f.valCache))-1)]
					if r > 0 && idx == vc.idx && slot == vc.kind {
						n = vc.v
						p += r
					} else if sc := &f.strCache[slot]; r == 0 && f.kinds[slot] == KindStr && p+2 < len(b) && b[p] == 0x8c &&
						string(b[p+2:min(len(b), p+2+int(b[p+1]))]) == string(sc.s) && sc.s != nil {
						// The string the record before had, and its put.
						p += 2 + len(sc.s)
						if p < len(b) && b[p] == 0x94 && (p+1 >= len(b) || b[p+1] != 0x94 && b[p+1] != 'q' && b[p+1] != 'r') {
							f.overlay = append(f.overlay, hStr<<hShift|uint64(sc.pool))
							p++
						} else if p, ok = f.put(b, p, hStr<<hShift|uint64(sc.pool)); !ok {
							return 0, false
						}
						n = sc.n
					} else {
						cache := r > 0
						if f.kinds[slot] == KindList {
							if n, p, ok = f.list(m, b, p); !ok {
								return 0, false
							}
							// Only a converted list's handle stays
							// what it is at commit.
							cache = cache && f.get(m, idx)>>hShift == hListRef
						} else {
							q := p
							var s int64
							if s, p, ok = f.str(m, b, p); !ok {
								return 0, false
							}
							if n, ok = m.conv.Str(int(slot), s); !ok {
								return 0, false
							}
							f.keepStr(b, q, slot, s, n)
						}
						if cache {
							*vc = fastCached{idx: idx, kind: slot, v: n}
						}
					}
				default:
					return 0, false
				}
				e.V[slot] = n
				e.Has |= 1 << slot
			}
		}
		if e.Has&(1<<f.need) == 0 {
			return 0, false
		}
		m.conv.Record(f.nrec, e)
		f.nrec++
	}
}

// list reads a KindList value: a memo reference to a converted list or to
// a list memoised earlier, or a new list of nested dicts (EMPTY_LIST, its
// put, then items by MARK...APPENDS groups or APPEND).
func (f *fastDecoder) list(m *Machine, b []byte, p int) (int64, int, bool) {
	p = frameSkip(b, p)
	if p >= len(b) {
		return 0, p, false
	}
	if b[p] != ']' {
		h, q, ok := f.memoRef(m, b, p)
		if !ok {
			return 0, p, false
		}
		switch h >> hShift {
		case hListRef:
			return int64(h & hMask), q, true
		case hObj:
			l, ok := m.objs.items[h&hMask].X.(*List)
			if !ok || l.records {
				return 0, p, false
			}
			if l.Ref > 0 {
				return l.Ref - 1, q, true
			}
			refs := f.refs[:0]
			for _, it := range l.Items {
				n, ok := f.dictOf(m, it)
				if !ok {
					return 0, p, false
				}
				refs = append(refs, n)
			}
			f.refs = refs
			f.actions = append(f.actions, fastAction{l: l})
			return m.conv.List(f.refs), q, true
		}
		return 0, p, false
	}
	p++
	slot := len(f.overlay)
	var ok bool
	if p, ok = f.put(b, p, hPend<<hShift|pendSelf); !ok {
		return 0, p, false
	}
	refs := f.refs[:0]
	for p < len(b) {
		if b[p] == '(' {
			p++
			for p < len(b) && b[p] != 'e' {
				// Most items are references to converted dicts.
				if idx, n := refAt(b, p); n > 0 {
					if h := f.get(m, idx); h>>hShift == hDictRef {
						refs = append(refs, int64(h&hMask))
						p += n
						continue
					}
				}
				var n int64
				if n, p, ok = f.dict(m, b, p); !ok {
					return 0, p, false
				}
				refs = append(refs, n)
			}
			if p >= len(b) {
				return 0, p, false
			}
			p++ // APPENDS
			continue
		}
		// A single item and APPEND, or the end of the list (the next
		// key of the record, or its SETITEMS).
		if b[p] != '}' {
			h, _, ok := f.memoRef(m, b, p)
			if !ok || h>>hShift == hStr {
				break
			}
		}
		var n int64
		if n, p, ok = f.dict(m, b, p); !ok {
			return 0, p, false
		}
		if p >= len(b) || b[p] != 'a' {
			return 0, p, false
		}
		p++
		refs = append(refs, n)
	}
	f.refs = refs
	id := m.conv.List(refs)
	if slot < len(f.overlay) {
		f.overlay[slot] = hListRef<<hShift | uint64(id)
	}
	return id, p, true
}

// dictOf is the DictRef number of an item of a list memoised before the
// batch: a converted dict, or a nested dict (converted again at commit, as
// the generic path converts it).
func (f *fastDecoder) dictOf(m *Machine, it Value) (int64, bool) {
	switch x := it.X.(type) {
	case DictRef:
		return it.N, true
	case *Dict:
		r, ok := f.content(x)
		if !ok {
			return 0, false
		}
		return m.conv.Dict(r), true
	}
	return 0, false
}

// content reads a nested dict memoised before the batch as a Record of
// Schema.Sub's slots (ok false when it has another key, or a value of
// another kind).
func (f *fastDecoder) content(d *Dict) (Record, bool) {
	var r Record
	for i := 0; i+1 < len(d.KV); i += 2 {
		k, v := d.KV[i], d.KV[i+1]
		if _, ok := k.X.(Str); !ok || k.N >= int64(len(f.subSlot)) || f.subSlot[k.N] == 0 {
			return r, false
		}
		slot := f.subSlot[k.N]
		switch f.subKinds[slot] {
		case KindStr:
			switch v.X.(type) {
			case Str:
				r.V[slot] = v.N
			case None:
				r.V[slot] = -1
			default:
				return r, false
			}
		case KindInt:
			if v.X != nil {
				return r, false
			}
			r.V[slot] = v.N
		case KindNone:
			continue
		default:
			return r, false
		}
		r.Has |= 1 << slot
	}
	return r, true
}

// dict reads one item of a new list of nested dicts: a memo reference to a
// converted dict or to a dict memoised before the batch, or a new dict.
func (f *fastDecoder) dict(m *Machine, b []byte, p int) (int64, int, bool) {
	p = frameSkip(b, p)
	if p >= len(b) {
		return 0, p, false
	}
	if b[p] != '}' {
		h, q, ok := f.memoRef(m, b, p)
		if !ok {
			return 0, p, false
		}
		switch h >> hShift {
		case hDictRef:
			return int64(h & hMask), q, true
		case hObj:
			d, ok := m.objs.items[h&hMask].X.(*Dict)
			if !ok {
				return 0, p, false
			}
			r, ok := f.content(d)
			if !ok {
				return 0, p, false
			}
			f.actions = append(f.actions, fastAction{d: d})
			return m.conv.Dict(r), q, true
		}
		return 0, p, false
	}
	p++
	slot := len(f.overlay)
	var ok bool
	if p, ok = f.put(b, p, hPend<<hShift|pendSelf); !ok {
		return 0, p, false
	}
	var r Record
	for p = frameSkip(b, p); p < len(b) && b[p] == '('; p = frameSkip(b, p) {
		p++
		for {
			if p = frameSkip(b, p); p >= len(b) {
				return 0, p, false
			}
			if b[p] == 'u' {
				p++
				break
			}
			var k int64
			if k, p, ok = f.str(m, b, p); !ok || k >= int64(len(f.subSlot)) || f.subSlot[k] == 0 {
				return 0, p, false
			}
			s := f.subSlot[k]
			switch f.subKinds[s] {
			case KindStr:
				v := int64(-1)
				if p = frameSkip(b, p); p < len(b) && b[p] == 'N' {
					p++
				} else if v, p, ok = f.str(m, b, p); !ok {
					return 0, p, false
				}
				r.V[s] = v
			case KindInt:
				if r.V[s], p, ok = f.integer(m, b, p); !ok {
					return 0, p, false
				}
			case KindNone:
				if p = frameSkip(b, p); p < len(b) && b[p] == 'N' {
					p++
				} else if _, p, ok = f.str(m, b, p); !ok {
					return 0, p, false
				}
				continue
			default:
				return 0, p, false
			}
			r.Has |= 1 << s
		}
	}
	id := m.conv.Dict(r)
	if slot < len(f.overlay) {
		f.overlay[slot] = hDictRef<<hShift | uint64(id)
	}
	return id, p, true
}

// frameSkip steps over FRAME opcodes at b[p]. Protocol 4 framing puts one
// every 64 KB before an object (an entry, a key, a value, a list item);
// the scan skips them there, in the slower paths it takes when the usual
// opcode is not found. A FRAME anywhere else gives the batch up, which is
// always right: the generic machine then reads it.
func frameSkip(b []byte, p int) int {
	for p < len(b) && b[p] == 0x95 {
		p += 9
	}
	return p
}
