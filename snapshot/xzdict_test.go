package snapshot

import (
	"bytes"
	"errors"
	"hash/crc32"
	"testing"
)

// xzWithDict is a small xz file (one stream, one block holding "hello")
// whose LZMA2 filter asks for the dictionary of code dictCode.
func xzWithDict(dictCode byte) []byte {
	// Built by Python's lzma.compress(b"hello", preset=1); the block
	// header's dictionary byte is replaced and its CRC32 fixed.
	x := []byte("\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F\x02\x00!\x01\x10\x00\x00\x00\xa8p\x8e\x86\x01\x00\x04hello\x00\x00\x00\x00\xb17\xb9\xdb\xe5\xda\x1e\x9b\x00\x01\x1d\x05\xb8-\x80\xaf\x1f\xb6\xf3}\x01\x00\x00\x00\x00\x04YZ")
	bh := x[12:24]
	bh[4] = dictCode
	c := crc32.ChecksumIEEE(bh[:8])
	bh[8], bh[9], bh[10], bh[11] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	return x
}

// TestXZDict: an xz file whose header asks for a dictionary larger than
// the data could fill ends in the limit's error before the xz reader
// allocates it; a genuine dictionary (xz -9's 64 MiB) passes the check.
func TestXZDict(t *testing.T) {
	for _, tt := range []struct {
		code  byte
		size  int64 // the file's size, 0: unknown (a pipe)
		limit bool
	}{
		{0x10, 64, false}, // 1 MiB (xz -1)
		{0x16, 64, false}, // 8 MiB (xz -6)
		{26, 64, false},   // 64 MiB (xz -9)
		{40, 64, true},    // 4 GiB
		{40, 0, true},
		{36, 64, true}, // 1 GiB, for a file of 64 bytes
		{36, 0, false}, // 1 GiB from a pipe: xz can write it
		{36, 20 << 20, false},
	} {
		_, err := decode(bytes.NewReader(xzWithDict(tt.code)), tt.size, Limits{})
		var le *LimitError
		if got := errors.As(err, &le) && le.Limit == "xz dictionary"; got != tt.limit {
			t.Errorf("dictionary code %d, size %d: err %v; want the xz dictionary limit: %v", tt.code, tt.size, err, tt.limit)
		}
	}
}
