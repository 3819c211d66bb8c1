package snapshot

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMemoSlots: every kind of handle goes through a 4-byte memo slot and
// back unchanged; the ones whose payload fits (below 2^29; an entry of one
// of the first eight device lists below 2^26) take no room in the wide
// table, the others one entry each, given back when the slot is written
// again.
func TestMemoSlots(t *testing.T) {
	m := &machine{budget: newBudget(Limits{}.withDefaults(), func() int64 { return 0 })}
	for range 10 {
		m.evLists = append(m.evLists, &plist{memo: -1})
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
		{"frame", hFrame<<hShift | 123456, false},
		{"frame past limit", hFrame<<hShift | 1<<40, true},
		{"stack", hStack<<hShift | 99, false},
		{"stack past limit", hStack<<hShift | (slotMask + 1), true},
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
			if !ok || v.x != (*evList)(m.evLists[l]) || uint64(v.n) != n {
				t.Errorf("%s: value of %#x is entry %d of %p, want %d of list %d", tt.name, tt.h, v.n, v.x, n, l)
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

// TestManyDevices decodes ten device traces whose entries the last trace
// references again (testdata/gen/manydevices.py): the references to the
// ninth and tenth lists' entries go through the wide table. Fast path,
// generic machine and gopickle agree.
func TestManyDevices(t *testing.T) {
	data := readFixture(t, "manydevices.pickle")
	fast, _ := decodeBoth(t, data)
	ref, err := DecodeReference(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := canon(ref), canon(fast); !reflect.DeepEqual(a, b) {
		t.Fatalf("decoder differs from gopickle (-gopickle +fast):\n%s", cmp.Diff(a, b))
	}
	if len(fast.Traces) != 10 || len(fast.Traces[9]) != 126 {
		t.Fatalf("%d traces, the last of %d entries; want 10, the last of 126", len(fast.Traces), len(fast.Traces[len(fast.Traces)-1]))
	}
	for i, want := range []TraceEntry{fast.Traces[0][3], fast.Traces[1][4], fast.Traces[7][5], fast.Traces[8][6], fast.Traces[8][7], fast.Traces[9][8]} {
		if got := fast.Traces[9][120+i]; !reflect.DeepEqual(got, want) {
			t.Errorf("device 9 entry %d: %+v, want %+v", 120+i, got, want)
		}
	}
	m := runMachine(t, data, Limits{})
	if len(m.wide.items) == 0 || m.fast.taken == 0 {
		t.Errorf("%d wide handles, %d fast-path batches; want some of each", len(m.wide.items), m.fast.taken)
	}
}

// TestMemoHeldCounted: values that only the memo keeps alive (memoized,
// then popped) are charged to the decoded-object budget, so a file of
// 5*10^6 empty lists, dicts or bytes values ends in the budget's error
// instead of holding a gigabyte (issue 28).
func TestMemoHeldCounted(t *testing.T) {
	head := []byte("\x80\x04}(\x8c\x08segments]\x8c\x0ddevice_traces]")
	for _, tt := range []struct {
		name string
		unit string
	}{
		{"lists", "]\x940"},
		{"dicts", "}\x940"},
		{"tuples", "K\x01\x85\x940"},
		{"bytes", "C\x00\x940"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			b.Write(head)
			for range 5_000_000 {
				b.WriteString(tt.unit)
			}
			b.WriteString("u.")
			_, err := Decode(bytes.NewReader(b.Bytes()))
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != "decoded-object budget" {
				t.Fatalf("%d bytes of memoized %s: err %v, want the decoded-object budget's", b.Len(), tt.name, err)
			}
		})
	}
}
