// Package addrmap is the replay's index of device addresses: an
// open-addressing map from an address to an int32 index, shared by the
// replay, the recording inference and the step finder.
package addrmap

import (
	"math/bits"

	"github.com/snapview/snapview/snapshot"
)

// Map maps device addresses to int32 indexes: the replay's block index
// (every block by start address), the hottest lookup of the replay. It is
// an open-addressing table with linear probing and backward-shift
// deletion, at most half full; device addresses are multiples of 512, so
// the hash drops those bits before a Fibonacci multiply. It does the
// replay's lookups, inserts and deletes in a third of the time of a Go
// map[snapshot.Addr]int32.
type Map struct {
	Slots []addrSlot
	Shift uint // 64 - log2(len(slots))
	N     int
}

type addrSlot struct {
	Key  snapshot.Addr
	Val  int32
	Used bool
}

func New(hint int) Map {
	size := 16
	for size < 2*hint {
		size *= 2
	}
	return Map{Slots: make([]addrSlot, size), Shift: uint(64 - bits.TrailingZeros(uint(size)))}
}

func (m *Map) home(k snapshot.Addr) int {
	return int((uint64(k) >> 9 * 0x9E3779B97F4A7C15) >> m.Shift)
}

// Len returns the number of keys.
func (m *Map) Len() int { return m.N }

// Get returns the value of k and whether k is present.
func (m *Map) Get(k snapshot.Addr) (int32, bool) {
	mask := len(m.Slots) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		s := &m.Slots[i]
		if !s.Used {
			return 0, false
		}
		if s.Key == k {
			return s.Val, true
		}
	}
}

// Set makes k map to v.
func (m *Map) Set(k snapshot.Addr, v int32) {
	if 2*(m.N+1) > len(m.Slots) {
		m.grow()
	}
	mask := len(m.Slots) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		s := &m.Slots[i]
		if !s.Used {
			*s = addrSlot{Key: k, Val: v, Used: true}
			m.N++
			return
		}
		if s.Key == k {
			s.Val = v
			return
		}
	}
}

// Del removes k, if present.
func (m *Map) Del(k snapshot.Addr) {
	mask := len(m.Slots) - 1
	i := m.home(k)
	for {
		s := &m.Slots[i]
		if !s.Used {
			return
		}
		if s.Key == k {
			break
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move later entries of the probe run into
	// the hole when their home does not lie between the hole and them.
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := &m.Slots[j]
		if !s.Used {
			break
		}
		h := m.home(s.Key)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			m.Slots[i] = *s
			i = j
		}
	}
	m.Slots[i] = addrSlot{}
	m.N--
}

// Is reports whether k maps to v.
func (m *Map) Is(k snapshot.Addr, v int32) bool {
	got, ok := m.Get(k)
	return ok && got == v
}

// DelIf removes k when it maps to v.
func (m *Map) DelIf(k snapshot.Addr, v int32) {
	if m.Is(k, v) {
		m.Del(k)
	}
}

func (m *Map) grow() {
	old := m.Slots
	*m = New(len(old))
	for i := range old {
		if old[i].Used {
			m.Set(old[i].Key, old[i].Val)
		}
	}
}
