package pickle

import (
	"math"
	"math/big"
	"strings"
	"testing"
)

// le is the little-endian two's-complement bytes of z in n bytes, as
// Python's encode_long writes them.
func le(z *big.Int, n int) []byte {
	m := new(big.Int).Set(z)
	if m.Sign() < 0 {
		m.Add(m, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
	}
	be := m.FillBytes(make([]byte, n))
	out := make([]byte, n)
	for i := range be {
		out[n-1-i] = be[i]
	}
	return out
}

// TestDecodeLong checks decodeLong against math/big: the value modulo
// 2^64, the sign and whether it fits uint64, at widths around 64 bits.
func TestDecodeLong(t *testing.T) {
	two64 := new(big.Int).Lsh(big.NewInt(1), 64)
	for _, s := range []string{"0", "-1", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "18446744073709551615", "18446744073709551616", "-9223372036854775809",
		"-18446744073709551617", "340282366920938463463374607431768211455", "-" + strings.Repeat("7", 60)} {
		z, _ := new(big.Int).SetString(s, 10)
		for _, n := range []int{(z.BitLen() + 8) / 8, 20, 40} {
			if n < (z.BitLen()+8)/8 {
				continue
			}
			v := DecodeLong(le(z, n))
			lo := new(big.Int).Mod(z, two64).Uint64()
			switch x := v.X.(type) {
			case nil:
				if !z.IsInt64() || v.N != z.Int64() {
					t.Errorf("%s in %d bytes: int %d", s, n, v.N)
				}
			case *WideInt:
				if z.IsInt64() || x.Lo != lo || x.Neg != (z.Sign() < 0) || x.U64 != z.IsUint64() {
					t.Errorf("%s in %d bytes: %+v, want lo %d", s, n, *x, lo)
				}
			}
			w, _ := ParseWideInt(s)
			if x, ok := w.X.(*WideInt); ok && (x.Lo != lo || x.U64 != z.IsUint64()) {
				t.Errorf("parseWideInt(%s) = %+v, want lo %d", s, *x, lo)
			}
		}
	}
	if w, _ := ParseWideInt(strings.Repeat("9", 5000)); len(w.X.(*WideInt).text) > 64 {
		t.Errorf("a 5000-digit number's text is %d bytes", len(w.X.(*WideInt).text))
	}
	if v := DecodeLong(le(new(big.Int).SetUint64(math.MaxUint64), 9)); !v.X.(*WideInt).U64 {
		t.Error("2^64-1 does not fit uint64")
	}
}
