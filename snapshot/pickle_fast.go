package snapshot

import (
	"encoding/binary"
	"unicode/utf8"
)

// This file is the decoder's fast path for the bulk of a snapshot: the
// batches of trace entries PyTorch's pickler writes as
//
//	MARK {EMPTY_DICT [put] MARK (key value)... SETITEMS}... APPENDS
//
// onto a device's trace list, with keys and frames mostly memo references
// (BINGET/LONG_BINGET) and values small ints, short strings and frame lists.
// fastBatch reads such a batch straight from the read buffer and converts
// each entry as it goes, with no pickle stack, no dict objects and no
// opcode dispatch per value.
//
// It is speculative: the whole batch, up to its APPENDS, must be in the
// buffer and of that shape (known entry and frame keys, values of the types
// PyTorch writes, sequential memo puts, no reference to a dict of the batch
// itself). Anything else, and the batch is left untouched for the generic
// machine (machine.run), which then reads it op by op. The scan changes no
// state the generic machine reads until the batch is accepted: memo puts go
// to an overlay, and what the generic path does to older memo slots when it
// converts (a frame dict or a frame list memoised before the trace, e.g. in
// the segments, becomes a compact reference) is recorded and replayed at
// commit. Only interning (strings in the pool, frames, stacks and strings
// of the model) happens during the scan; it is by content, so a batch given
// up leaves at most unused table rows that nothing refers to.
//
// The differential test against gopickle (reference_test.go), the
// fast-versus-generic test (pickle_fast_test.go) and FuzzDecode keep the two
// paths equal.

// hPend is an overlay handle for an object of the batch not yet known as
// anything else: a trace-entry dict (payload: its index in the batch) or a
// frame dict or list still being read (payload: 1<<59). A reference to one
// gives the batch up.
const (
	hPend    = 7
	pendSelf = 1 << 59
)

// fastWant is how many bytes fastBatch tries to have buffered before a
// scan: PyTorch's batches of 1000 entries take 70 to 300 KB.
const fastWant = 512 << 10

const debugFast = false

// Frame keys, by string-pool index (fastDecoder.frameKey).
const (
	fkOther uint8 = iota
	fkFilename
	fkLine
	fkName
	fkIgnored // fx_node_op, fx_node_name, fx_node_target, fx_original_trace
)

// keepStr remembers the SHORT_BINUNICODE at b[q], if it is one, as the last
// string of entry key kind: its pool index and its StrID (for an action,
// the Action).
func (f *fastDecoder) keepStr(b []byte, q int, kind uint8, pool int64, id StrID) {
	q = frameSkip(b, q)
	if q+1 >= len(b) || b[q] != 0x8c {
		return
	}
	sc := &f.strCache[kind]
	sc.s = append(sc.s[:0], b[q+2:q+2+int(b[q+1])]...)
	sc.pool, sc.id = pool, id
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
// memoised before the batch, replayed at commit: convert frame dict d, or
// frame list l.
type fastAction struct {
	d *pdict
	l *plist
}

// fastDecoder is the fast path's state, kept in the machine between batches
// so its buffers are reused.
type fastDecoder struct {
	ready    bool
	frameKey []uint8
	memo0    uint64   // the machine's memoLen when the batch began
	overlay  []uint64 // handles of memo indexes memo0, memo0+1, ...
	entries  []TraceEntry
	actions  []fastAction
	fields   [keyUserMetadata + 1]int
	ids      []FrameID
	keyBuf   []byte
	// last and lastIdx: the last short string interned and its pool index
	// (compile_context "N/A" comes as a new string in every entry).
	last    []byte
	lastIdx int64
	// keyCache remembers, by a pair's position in an entry, the memo
	// reference of its key and the key; valCache, by memo index, what a
	// reference as a value decoded to. They hold for one batch: the memo
	// slots below memo0 and those of the overlay do not change within it.
	keyCache [16]fastCached
	valCache [64]fastCached
	// strCache is, by entry key, the last SHORT_BINUNICODE value read
	// and its pool index and StrID (compile_context "N/A" is a new string
	// in every entry).
	strCache [keyUserMetadata + 1]struct {
		s    []byte
		pool int64
		id   StrID
	}
	// taken and given count the batches read here and those left to the
	// generic path (tests check that the fast path is used).
	taken, given int
}

func (f *fastDecoder) setup(p *strPool) {
	f.ready = true
	for k, name := range map[uint8][]string{
		fkFilename: {"filename"},
		fkLine:     {"line"},
		fkName:     {"name"},
		fkIgnored:  {"fx_node_op", "fx_node_name", "fx_node_target", "fx_original_trace"},
	} {
		for _, s := range name {
			i := p.addString(s)
			for int64(len(f.frameKey)) <= i {
				f.frameKey = append(f.frameKey, fkOther)
			}
			f.frameKey[i] = k
		}
	}
	f.lastIdx = -1
}

// fastTarget reports whether a MARK read with l on top of the stack may
// start a batch of trace entries for l: l takes entries (it is in event
// mode, or empty and unconverted, so that its first item decides) and no
// mark hides it.
func (m *machine) fastTarget(l *plist) bool {
	if m.lim.genericOnly {
		return false
	}
	if !l.evMode && (len(l.items) != 0 || l.evLen != 0 || l.stack != 0) {
		return false
	}
	return len(m.marks) == 0 || m.marks[len(m.marks)-1] < len(m.stack)
}

// fillSome reads until want bytes are buffered, the buffer is full or the
// source fails; a failure is kept for the generic path to report.
func (m *machine) fillSome(want int) {
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
// fastTarget). It reads the batch up to its APPENDS and appends the entries
// to l, as the generic machine would; it returns false, having changed
// nothing the generic machine reads, when the batch is not of the usual
// shape.
func (m *machine) fastBatch(l *plist) bool {
	f := &m.fast
	if !f.ready {
		f.setup(m.pool)
	}
	if m.wp-m.rp < fastWant && m.srcErr == nil {
		m.fillSome(fastWant)
	}
	f.memo0 = m.memoLen
	f.overlay = f.overlay[:0]
	f.entries = f.entries[:0]
	f.actions = f.actions[:0]
	f.fields = [keyUserMetadata + 1]int{}
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
	if len(m.stack)+len(m.marks)+len(b) >= m.lim.MaxStack {
		b = b[:max(0, m.lim.MaxStack-len(m.stack)-len(m.marks)-1)]
	}
	n, ok := f.scan(m, b)
	if !ok {
		f.given++
		if debugFast {
			println("given up at", m.off, "entries", len(f.entries))
		}
		return false
	}
	f.taken++
	m.rp += n
	m.off += int64(n)
	f.commit(m, l)
	return true
}

// commit applies a scanned batch: memo puts, the entries, the conversions
// of older objects, the field counts.
func (f *fastDecoder) commit(m *machine, l *plist) {
	c := m.conv
	l.evMode = true
	base := l.evLen
	m.addEvents(l, f.entries)
	// The handle of entry i is evH + i when the list has an evLists slot
	// and the first and last entries' handles have the same form (see
	// evHandle).
	evH := m.handle(val{n: int64(base), x: (*evList)(l)})
	if evH>>hShift == hObj {
		m.objs.release(uint32(evH & hMask))
	}
	if evH>>hShift != hEvent {
		evH = 0
	} else if h, ok := evHandle(uint64(l.evID-1), uint64(l.evLen-1)); !ok || h != evH+uint64(l.evLen-1-base) {
		evH = 0
	}
	for j, h := range f.overlay {
		idx := f.memo0 + uint64(j)
		if h>>hShift == hPend {
			if evH != 0 {
				h = evH + h&hMask
			} else {
				m.store(idx, val{n: int64(base) + int64(h&hMask), x: (*evList)(l)})
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
	// BINGET, all before the APPENDS that converts the entries; then,
	// entry by entry, it converts a frame list (converter.stack) or a
	// frame dict of a new list and lets the reference go (recycleDict),
	// so that a dict is recycled only when nothing converts it again.
	for _, a := range f.actions {
		if a.d != nil {
			addRef(val{x: a.d})
		} else {
			addRef(val{x: a.l})
		}
	}
	for _, a := range f.actions {
		if a.d != nil {
			c.frame(val{x: a.d}, "device_traces[][].frames[]")
			m.recycleDict(a.d)
		} else {
			c.stack(val{x: a.l}, "device_traces[][].frames")
		}
	}
	for k, n := range f.fields {
		c.entryFields[k] += n
	}
}

// addEvents is addEvent for a run of entries: what fits in the last chunk
// is copied at once.
func (m *machine) addEvents(l *plist, es []TraceEntry) {
	for len(es) > 0 {
		if n := len(l.evChunks); n > 0 {
			c := l.evChunks[n-1]
			if k := min(cap(c)-len(c), len(es)); k > 0 {
				l.evChunks[n-1] = append(c, es[:k]...)
				l.evLen += k
				m.budget.spend(int64(k) * entryBytes)
				es = es[k:]
				continue
			}
		}
		m.addEvent(l, es[0])
		es = es[1:]
	}
}

// get returns the memo handle of idx as the batch sees it; 0 (hUnset) when
// it is not in the dense memo or the overlay.
func (f *fastDecoder) get(m *machine, idx uint64) uint64 {
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
func (f *fastDecoder) memoRef(m *machine, b []byte, p int) (h uint64, q int, ok bool) {
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
func (f *fastDecoder) str(m *machine, b []byte, p int) (int64, int, bool) {
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
		if int64(n) > m.lim.MaxString {
			return 0, p, false
		}
		s = b[p+2 : p+2+n]
		p += 2 + n
	case 'X':
		if p+4 >= len(b) {
			return 0, p, false
		}
		n := uint64(binary.LittleEndian.Uint32(b[p+1:]))
		if uint64(p)+5+n > uint64(len(b)) || n > uint64(m.lim.MaxString) {
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
		idx = m.pool.add(s).n
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
func (f *fastDecoder) integer(m *machine, b []byte, p int) (int64, int, bool) {
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
		return decodeLong(b[p+2 : p+2+n]).n, p + 2 + n, true
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
// It is longer than the package's other functions (about 175 lines) on
// purpose: it is the inner loop that reads every trace entry of a
// snapshot (2 million in the benchmark file), one state machine over the
// entry's keys whose states share the position p, the entry being built
// and the batch's bounds; split into functions, each would take and
// return them all. Its parts that are not per-key (ints, strings, memo
// references, frames) are already functions of their own.
func (f *fastDecoder) scan(m *machine, b []byte) (int, bool) {
	c := m.conv
	keys := c.entryKeys
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
			if len(f.entries) == 0 {
				return 0, false
			}
			return p + 1, true
		case '}':
			p++
		default:
			return 0, false
		}
		var ok bool
		if p, ok = f.put(b, p, hPend<<hShift|uint64(len(f.entries))); !ok {
			return 0, false
		}
		var e TraceEntry
		var deviceFree uint64
		hasFree, hasAction := false, false
		// One or more MARK (key value)... SETITEMS groups; j is the
		// pair's position in the entry, for the caches.
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
				// The key: most often the memo reference the entry
				// before had at this position.
				var kind uint8
				kc := &f.keyCache[j&(len(f.keyCache)-1)]
				if idx, n := refAt(b, p); n > 0 && idx == kc.idx {
					kind = kc.kind
					p += n
				} else {
					var k int64
					if k, p, ok = f.str(m, b, p); !ok || k >= int64(len(keys)) || keys[k] == keyOther {
						return 0, false
					}
					kind = keys[k]
					if n > 0 {
						*kc = fastCached{idx: idx, kind: kind}
					}
				}
				f.fields[kind]++
				var n int64
				switch kind {
				case keyAddr, keyDeviceFree, keySize, keyStream, keyTimeUS:
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
					switch kind {
					case keyAddr:
						e.Addr = Addr(n)
						e.Flags |= FlagAddr
					case keyDeviceFree:
						deviceFree = uint64(n)
						hasFree = true
					case keySize:
						e.Size = n
					case keyStream:
						e.Stream = uint64(n)
					case keyTimeUS:
						e.TimeUS = n
						e.Flags |= FlagTime
					}
				case keyAction, keyCompileContext, keyUserMetadata, keyFrames:
					// The value: a memo reference seen at this position
					// before, or read and converted.
					idx, r := refAt(b, p)
					vc := &f.valCache[idx&(uint64(len(f.valCache))-1)]
					if r > 0 && idx == vc.idx && kind == vc.kind {
						n = vc.v
						p += r
					} else if sc := &f.strCache[kind]; r == 0 && kind != keyFrames && p+2 < len(b) && b[p] == 0x8c &&
						string(b[p+2:min(len(b), p+2+int(b[p+1]))]) == string(sc.s) && sc.s != nil {
						// The string the entry before had, and its put.
						p += 2 + len(sc.s)
						if p < len(b) && b[p] == 0x94 && (p+1 >= len(b) || b[p+1] != 0x94 && b[p+1] != 'q' && b[p+1] != 'r') {
							f.overlay = append(f.overlay, hStr<<hShift|uint64(sc.pool))
							p++
						} else if p, ok = f.put(b, p, hStr<<hShift|uint64(sc.pool)); !ok {
							return 0, false
						}
						n = int64(sc.id) // for an action, the Action
					} else {
						cache := r > 0
						switch kind {
						case keyAction:
							q := p
							var s int64
							if s, p, ok = f.str(m, b, p); !ok {
								return 0, false
							}
							var a Action
							if a, ok = c.fastAction(s); !ok {
								return 0, false
							}
							n = int64(a)
							f.keepStr(b, q, kind, s, StrID(a))
						case keyFrames:
							var st StackID
							if st, p, ok = f.frames(m, b, p); !ok {
								return 0, false
							}
							n = int64(st)
							// Only a converted stack's handle stays
							// what it is at commit.
							cache = cache && f.get(m, idx)>>hShift == hStack
						default:
							q := p
							var s int64
							if s, p, ok = f.str(m, b, p); !ok {
								return 0, false
							}
							n = int64(c.poolStrID(val{n: s, x: strRef{}}, ""))
							f.keepStr(b, q, kind, s, StrID(n))
						}
						if cache {
							*vc = fastCached{idx: idx, kind: kind, v: n}
						}
					}
					switch kind {
					case keyAction:
						e.Action = Action(n)
						hasAction = true
					case keyFrames:
						e.Stack = StackID(n)
						e.Flags |= FlagFrames
					case keyCompileContext:
						e.CompileContext = StrID(n)
					default:
						e.UserMetadata = StrID(n)
					}
				default:
					return 0, false
				}
			}
		}
		if !hasAction {
			return 0, false
		}
		if e.Action == ActionOOM && hasFree {
			e.Addr = Addr(deviceFree)
		}
		f.entries = append(f.entries, e)
	}
}

// fastAction is poolAction for the fast path: known actions only (an
// unknown one is counted by the generic path).
func (c *converter) fastAction(s int64) (Action, bool) {
	if s < int64(len(c.actByStr)) && c.actByStr[s] != ActionNone {
		return c.actByStr[s], true
	}
	a, ok := ParseAction(c.pool.list[s])
	if !ok {
		return ActionNone, false
	}
	if s < 1<<20 {
		for int64(len(c.actByStr)) <= s {
			c.actByStr = append(c.actByStr, ActionNone)
		}
		c.actByStr[s] = a
	}
	return a, true
}

// frames reads an entry's "frames" value: a memo reference to a converted
// stack or to a frame list memoised earlier, or a new list of frames
// (EMPTY_LIST, its put, then items by MARK...APPENDS groups or APPEND).
func (f *fastDecoder) frames(m *machine, b []byte, p int) (StackID, int, bool) {
	p = frameSkip(b, p)
	if p >= len(b) {
		return 0, p, false
	}
	c := m.conv
	if b[p] != ']' {
		h, q, ok := f.memoRef(m, b, p)
		if !ok {
			return 0, p, false
		}
		switch h >> hShift {
		case hStack:
			return StackID(h & hMask), q, true
		case hObj:
			l, ok := m.objs.items[h&hMask].x.(*plist)
			if !ok || l.evMode {
				return 0, p, false
			}
			if l.stack > 0 {
				return l.stack - 1, q, true
			}
			ids := f.ids[:0]
			for _, it := range l.items {
				id, ok := f.frameOf(m, it)
				if !ok {
					return 0, p, false
				}
				ids = append(ids, id)
			}
			f.ids = ids
			f.actions = append(f.actions, fastAction{l: l})
			return f.internStack(c), q, true
		}
		return 0, p, false
	}
	p++
	slot := len(f.overlay)
	var ok bool
	if p, ok = f.put(b, p, hPend<<hShift|pendSelf); !ok {
		return 0, p, false
	}
	ids := f.ids[:0]
	for p < len(b) {
		if b[p] == '(' {
			p++
			for p < len(b) && b[p] != 'e' {
				// Most items are references to converted frames.
				if idx, n := refAt(b, p); n > 0 {
					if h := f.get(m, idx); h>>hShift == hFrame {
						ids = append(ids, FrameID(h&hMask))
						p += n
						continue
					}
				}
				var id FrameID
				if id, p, ok = f.frame(m, b, p); !ok {
					return 0, p, false
				}
				ids = append(ids, id)
			}
			if p >= len(b) {
				return 0, p, false
			}
			p++ // APPENDS
			continue
		}
		// A single item and APPEND, or the end of the list (the next
		// key of the entry, or its SETITEMS).
		if b[p] != '}' {
			h, _, ok := f.memoRef(m, b, p)
			if !ok || h>>hShift == hStr {
				break
			}
		}
		var id FrameID
		if id, p, ok = f.frame(m, b, p); !ok {
			return 0, p, false
		}
		if p >= len(b) || b[p] != 'a' {
			return 0, p, false
		}
		p++
		ids = append(ids, id)
	}
	f.ids = ids
	id := NoStack
	if len(ids) > 0 {
		id = f.internStack(c)
	}
	if slot < len(f.overlay) {
		f.overlay[slot] = hStack<<hShift | uint64(id)
	}
	return id, p, true
}

// frameOf is the FrameID of an item of a frame list memoised before the
// batch: a converted frame, or a frame dict (converted again at commit, as
// the generic path converts it).
func (f *fastDecoder) frameOf(m *machine, it val) (FrameID, bool) {
	switch x := it.x.(type) {
	case frameRef:
		return FrameID(it.n), true
	case *pdict:
		fr, ok := f.frameContent(m, x)
		if !ok {
			return 0, false
		}
		return m.conv.internFrame(fr), true
	}
	return 0, false
}

// frameContent reads a frame dict as converter.frame does, for the keys
// it knows without a count (ok false otherwise).
func (f *fastDecoder) frameContent(m *machine, d *pdict) (Frame, bool) {
	var fr Frame
	for i := 0; i+1 < len(d.kv); i += 2 {
		k, v := d.kv[i], d.kv[i+1]
		if _, ok := k.x.(strRef); !ok || k.n >= int64(len(f.frameKey)) {
			return fr, false
		}
		switch f.frameKey[k.n] {
		case fkFilename, fkName:
			var s string
			switch v.x.(type) {
			case strRef:
				s = m.pool.list[v.n]
			case noneT:
			default:
				return fr, false
			}
			if f.frameKey[k.n] == fkFilename {
				fr.Filename = s
			} else {
				fr.Name = s
			}
		case fkLine:
			if v.x != nil {
				return fr, false
			}
			fr.Line = v.n
		case fkIgnored:
		default:
			return fr, false
		}
	}
	return fr, true
}

// frame reads one item of a new frame list: a memo reference to a
// converted frame or to a frame dict memoised before the batch, or a new
// frame dict.
func (f *fastDecoder) frame(m *machine, b []byte, p int) (FrameID, int, bool) {
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
		case hFrame:
			return FrameID(h & hMask), q, true
		case hObj:
			d, ok := m.objs.items[h&hMask].x.(*pdict)
			if !ok {
				return 0, p, false
			}
			fr, ok := f.frameContent(m, d)
			if !ok {
				return 0, p, false
			}
			f.actions = append(f.actions, fastAction{d: d})
			return m.conv.internFrame(fr), q, true
		}
		return 0, p, false
	}
	p++
	slot := len(f.overlay)
	var ok bool
	if p, ok = f.put(b, p, hPend<<hShift|pendSelf); !ok {
		return 0, p, false
	}
	var fr Frame
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
			if k, p, ok = f.str(m, b, p); !ok || k >= int64(len(f.frameKey)) {
				return 0, p, false
			}
			switch f.frameKey[k] {
			case fkFilename, fkName:
				var s string
				if p = frameSkip(b, p); p < len(b) && b[p] == 'N' {
					p++
				} else {
					var si int64
					if si, p, ok = f.str(m, b, p); !ok {
						return 0, p, false
					}
					s = m.pool.list[si]
				}
				if f.frameKey[k] == fkFilename {
					fr.Filename = s
				} else {
					fr.Name = s
				}
			case fkLine:
				if fr.Line, p, ok = f.integer(m, b, p); !ok {
					return 0, p, false
				}
			case fkIgnored:
				if p = frameSkip(b, p); p < len(b) && b[p] == 'N' {
					p++
				} else if _, p, ok = f.str(m, b, p); !ok {
					return 0, p, false
				}
			default:
				return 0, p, false
			}
		}
	}
	id := m.conv.internFrame(fr)
	if slot < len(f.overlay) {
		f.overlay[slot] = hFrame<<hShift | uint64(id)
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

// internFrame returns the FrameID of fr, adding it if new.
func (c *converter) internFrame(fr Frame) FrameID {
	id, ok := c.frames[fr]
	if !ok {
		id = FrameID(len(c.s.Frames))
		c.s.Frames = append(c.s.Frames, fr)
		c.frames[fr] = id
	}
	return id
}

// internStack returns the StackID of the frames in f.ids, adding the stack
// if new (the key is converter.stack's).
func (f *fastDecoder) internStack(c *converter) StackID {
	f.keyBuf = f.keyBuf[:0]
	for _, id := range f.ids {
		f.keyBuf = binary.AppendUvarint(f.keyBuf, uint64(id))
	}
	id, ok := c.stacks[string(f.keyBuf)]
	if !ok {
		id = StackID(len(c.s.Stacks))
		c.s.Stacks = append(c.s.Stacks, append([]FrameID(nil), f.ids...))
		c.stacks[string(f.keyBuf)] = id
	}
	return id
}
