package snapshot

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"
)

// TestLongUnknownKeyShared: one unknown key of 1 MiB, memoized and
// shared by 2000 trace entries, is counted under a short text, and the
// decoder allocates a bounded multiple of the file (it copied and hashed
// the key on each entry: 2 GB for a 1 MiB file).
func TestLongUnknownKeyShared(t *testing.T) {
	str := func(s string) []byte {
		if len(s) < 256 {
			return append([]byte{0x8c, byte(len(s))}, s...)
		}
		return append(binary.LittleEndian.AppendUint32([]byte{'X'}, uint32(len(s))), s...)
	}
	key := strings.Repeat("u", 1<<20)
	var b bytes.Buffer
	b.WriteString("\x80\x04}(")
	b.Write(str("segments"))
	b.WriteString("]")
	b.Write(str("device_traces"))
	b.WriteString("](]")
	for i := range 2000 {
		b.WriteString("}(")
		b.Write(str("action"))
		b.Write(str("alloc"))
		b.Write(str("addr"))
		b.Write(binary.LittleEndian.AppendUint32([]byte{'J'}, uint32(0x10000000+512*i)))
		b.Write(str("size"))
		b.WriteString("M\x00\x02")
		b.Write(str("time_us"))
		b.Write(binary.LittleEndian.AppendUint32([]byte{'J'}, uint32(i)))
		if i == 0 {
			b.Write(str(key))
			b.WriteString("r\x00\x00\x01\x00")
		} else {
			b.WriteString("j\x00\x00\x01\x00")
		}
		b.WriteString("K\x01ua")
	}
	b.WriteString("eu.")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := Decode(bytes.NewReader(b.Bytes()))
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Unknown) != 1 || s.Unknown[0].Count != 2000 || len(s.Unknown[0].Name) > 200 {
		t.Errorf("unknown keys %d, want one of 2000 entries under a short name", len(s.Unknown))
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64*uint64(b.Len()) {
		t.Errorf("decoding %d bytes allocated %d bytes, more than 64 times the file", b.Len(), alloc)
	}
}
