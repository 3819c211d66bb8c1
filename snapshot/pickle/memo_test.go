package pickle

import (
	"testing"
)

// TestMemoSlots: every kind of handle goes through a 4-byte memo slot and
// back unchanged; the ones whose payload fits (below 2^29; an entry of one
// of the first eight device lists below 2^26) take no room in the wide
// table, the others one entry each, given back when the slot is written
// again.
func TestMemoSlots(t *testing.T) {
	m := &Machine{budget: NewBudget(64<<20, func() int64 { return 0 })}
	for range 10 {
		m.evLists = append(m.evLists, &List{memo: -1})
	}
	ev := func(list, n uint64) uint64 {
		h, ok := evHandle(list, n)
		if !ok {
			t.Fatalf("evHandle(%d, %d): none", list, n)
		}
		return h
	}
	for _, tt := range []struct {
		name string
		h    uint64
		wide bool
	}{
		{"unset", hUnset, false},
		{"obj 0", hObj << hShift, false},
		{"obj at limit", hObj<<hShift | slotMask, false},
		{"obj past limit", hObj<<hShift | (slotMask + 1), true},
		{"str 7", hStr<<hShift | 7, false},
		{"str at limit", hStr<<hShift | slotMask, false},
		{"str past limit", hStr<<hShift | (slotMask + 1), true},
		{"dict ref", hDictRef<<hShift | 123456, false},
		{"dict ref past limit", hDictRef<<hShift | 1<<40, true},
		{"list ref", hListRef<<hShift | 99, false},
		{"list ref past limit", hListRef<<hShift | (slotMask + 1), true},
		{"int 0", hInt << hShift, false},
		{"int at limit", hInt<<hShift | slotMask, false},
		{"int past limit", hInt<<hShift | (slotMask + 1), true},
		{"int largest", hInt<<hShift | (hMask - 1), true},
		{"event, first list", ev(0, 5), false},
		{"event, second list", ev(1, 0), false},
		{"event, second list, last short index", ev(1, 1<<evShortShift-1), false},
		{"event, second list, past short index", ev(1, 1<<evShortShift), true},
		{"event, eighth list", ev(7, 1<<evShortShift-1), false},
		{"event, ninth list", ev(8, 0), true},
		{"event, tenth list", ev(9, 77), true},
		{"event, tenth list, last index", ev(9, 1<<evShift-1), true},
	} {
		wide := len(m.wide.items)
		s := m.pack(tt.h)
		if got := m.unpack(s); got != tt.h {
			t.Errorf("%s: handle %#x comes back as %#x (slot %#x)", tt.name, tt.h, got, s)
		}
		if got := len(m.wide.items) > wide; got != tt.wide {
			t.Errorf("%s: handle %#x in the wide table: %v, want %v", tt.name, tt.h, got, tt.wide)
		}
		if tt.h>>hShift == hEvent {
			v, ok := m.value(tt.h)
			var l, n uint64
			if tt.h&evLong == 0 {
				l, n = tt.h&hMask>>evShortShift, tt.h&(1<<evShortShift-1)
			} else {
				l, n = tt.h&^evLong&hMask>>evShift, tt.h&(1<<evShift-1)
			}
			if !ok || v.X != (*Item)(m.evLists[l]) || uint64(v.N) != n {
				t.Errorf("%s: value of %#x is entry %d of %p, want %d of list %d", tt.name, tt.h, v.N, v.X, n, l)
			}
		}
		if tt.wide && tt.h>>hShift != hObj { // (releasing an hObj frees its objs entry)
			m.release(s)
			if len(m.wide.free) != 1 {
				t.Errorf("%s: releasing the slot frees %d wide entries, want 1", tt.name, len(m.wide.free))
			}
			if s2 := m.pack(tt.h); s2 != s {
				t.Errorf("%s: the freed wide entry is not reused (slot %#x, then %#x)", tt.name, s, s2)
			}
			m.release(s)
			m.wide.free = m.wide.free[:0]
		}
	}
	if _, ok := evHandle(maxEvLists+1, 0); ok {
		t.Errorf("evHandle of list %d: a handle, want none", maxEvLists+1)
	}
	if _, ok := evHandle(0, 1<<evShift); ok {
		t.Errorf("evHandle of entry 2^%d: a handle, want none", evShift)
	}
}

// TestRefsSaturate: a reference count at its top stays there, and the
// object is never recycled (a wrapped count handed a dict still in use to
// the next one built).
func TestRefsSaturate(t *testing.T) {
	m := &Machine{}
	d := &Dict{memo: 3, refs: pinned - 1}
	for range 3 {
		addRef(Value{X: d})
	}
	if d.refs != pinned {
		t.Fatalf("refs %d, want %d", d.refs, pinned)
	}
	for range 5 {
		m.RecycleDict(d)
	}
	if d.refs != pinned || len(m.free) != 0 {
		t.Errorf("a pinned dict was released (refs %d, %d recycled)", d.refs, len(m.free))
	}
}
