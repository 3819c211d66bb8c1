package addrmap

import (
	"math/rand/v2"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestAddrMapAgainstMap runs random inserts, updates and deletes on an
// addrMap and a Go map side by side, with keys crowded into few home
// slots so that probe runs wrap and deletions shift entries back.
func TestAddrMapAgainstMap(t *testing.T) {
	for _, keys := range []int{5, 40, 3000} {
		r := rand.New(rand.NewPCG(1, uint64(keys)))
		m := New(0)
		ref := map[snapshot.Addr]int32{}
		key := func() snapshot.Addr {
			// 512-byte aligned, as device addresses are, in a small range.
			return snapshot.Addr(0x7f0000000000 + 512*r.IntN(keys))
		}
		for i := range 200000 {
			k := key()
			switch r.IntN(3) {
			case 0, 1:
				m.Set(k, int32(i))
				ref[k] = int32(i)
			case 2:
				m.Del(k)
				delete(ref, k)
			}
			if m.Len() != len(ref) {
				t.Fatalf("keys %d, step %d: len %d, want %d", keys, i, m.Len(), len(ref))
			}
			if i%97 == 0 {
				for rk, rv := range ref {
					if v, ok := m.Get(rk); !ok || v != rv {
						t.Fatalf("keys %d, step %d: get(%v) = %d, %t; want %d", keys, i, rk, v, ok, rv)
					}
				}
				if k := key(); true {
					_, want := ref[k]
					if _, ok := m.Get(k); ok != want {
						t.Fatalf("keys %d, step %d: get(%v) present %t, want %t", keys, i, k, ok, want)
					}
				}
			}
		}
	}
}

func TestAddrMapDelIf(t *testing.T) {
	m := New(4)
	m.Set(512, 1)
	m.DelIf(512, 2)
	if !m.Is(512, 1) {
		t.Fatal("delIf removed a key mapped to another value")
	}
	m.DelIf(512, 1)
	if _, ok := m.Get(512); ok || m.Len() != 0 {
		t.Fatal("delIf kept the key")
	}
	m.DelIf(1024, 0) // absent: no-op
	m.Del(1024)
	if m.Len() != 0 {
		t.Fatal("deleting an absent key changed len")
	}
}
