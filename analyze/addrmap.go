package analyze

import (
	"math/bits"

	"github.com/snapview/snapview/snapshot"
)

// addrMap maps device addresses to int32 indexes: the replay's block index
// (every block by start address), the hottest lookup of the replay. It is
// an open-addressing table with linear probing and backward-shift
// deletion, at most half full; device addresses are multiples of 512, so
// the hash drops those bits before a Fibonacci multiply. It does the
// replay's lookups, inserts and deletes in a third of the time of a Go
// map[snapshot.Addr]int32.
type addrMap struct {
	slots []addrSlot
	shift uint // 64 - log2(len(slots))
	n     int
}

type addrSlot struct {
	key  snapshot.Addr
	val  int32
	used bool
}

func newAddrMap(hint int) addrMap {
	size := 16
	for size < 2*hint {
		size *= 2
	}
	return addrMap{slots: make([]addrSlot, size), shift: uint(64 - bits.TrailingZeros(uint(size)))}
}

func (m *addrMap) home(k snapshot.Addr) int {
	return int((uint64(k) >> 9 * 0x9E3779B97F4A7C15) >> m.shift)
}

// len returns the number of keys.
func (m *addrMap) len() int { return m.n }

// get returns the value of k and whether k is present.
func (m *addrMap) get(k snapshot.Addr) (int32, bool) {
	mask := len(m.slots) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if !s.used {
			return 0, false
		}
		if s.key == k {
			return s.val, true
		}
	}
}

// set makes k map to v.
func (m *addrMap) set(k snapshot.Addr, v int32) {
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
	}
	mask := len(m.slots) - 1
	for i := m.home(k); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if !s.used {
			*s = addrSlot{key: k, val: v, used: true}
			m.n++
			return
		}
		if s.key == k {
			s.val = v
			return
		}
	}
}

// del removes k, if present.
func (m *addrMap) del(k snapshot.Addr) {
	mask := len(m.slots) - 1
	i := m.home(k)
	for {
		s := &m.slots[i]
		if !s.used {
			return
		}
		if s.key == k {
			break
		}
		i = (i + 1) & mask
	}
	// Backward-shift deletion: move later entries of the probe run into
	// the hole when their home does not lie between the hole and them.
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := &m.slots[j]
		if !s.used {
			break
		}
		h := m.home(s.key)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			m.slots[i] = *s
			i = j
		}
	}
	m.slots[i] = addrSlot{}
	m.n--
}

// is reports whether k maps to v.
func (m *addrMap) is(k snapshot.Addr, v int32) bool {
	got, ok := m.get(k)
	return ok && got == v
}

// delIf removes k when it maps to v.
func (m *addrMap) delIf(k snapshot.Addr, v int32) {
	if m.is(k, v) {
		m.del(k)
	}
}

func (m *addrMap) grow() {
	old := m.slots
	*m = newAddrMap(len(old))
	for i := range old {
		if old[i].used {
			m.set(old[i].key, old[i].val)
		}
	}
}
