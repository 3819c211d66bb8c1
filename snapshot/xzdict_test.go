package snapshot

import (
	"bytes"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
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

// TestXZLaterBlocks: every block of a multi-block xz file has its
// dictionary checked, not only the first. testdata/mlp_train_5blocks.pickle.xz
// is testdata/snapshots/mlp_train.pickle compressed by
// `xz -6 --block-size=8KiB` (xz 5.4): five blocks whose 12-byte headers
// start at the offsets below (xz --robot -lvv); the test sets one header's
// LZMA2 dictionary to 4 GiB and fixes its CRC32.
func TestXZLaterBlocks(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "mlp_train_5blocks.pickle.xz"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := os.ReadFile(filepath.Join("..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := decode(bytes.NewReader(plain), int64(len(plain)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := decode(bytes.NewReader(good), int64(len(good)), Limits{})
	if err != nil {
		t.Fatalf("the five-block file: %v", err)
	}
	if len(got.Segments) != len(want.Segments) || len(got.Traces[0]) != len(want.Traces[0]) {
		t.Errorf("the five-block file decodes to %d segments, %d entries; the pickle to %d, %d",
			len(got.Segments), len(got.Traces[0]), len(want.Segments), len(want.Traces[0]))
	}
	for k, off := range []int{12, 1728, 2984, 3992, 4968} {
		x := bytes.Clone(good)
		h := x[off : off+12]
		i := bytes.Index(h[:8], []byte{0x21, 0x01})
		if i < 0 {
			t.Fatalf("block %d: no LZMA2 filter in its header % x", k+1, h)
		}
		h[i+2] = 40 // 4 GiB
		c := crc32.ChecksumIEEE(h[:8])
		h[8], h[9], h[10], h[11] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
		for _, size := range []int64{int64(len(x)), 0} {
			_, err := decode(bytes.NewReader(x), size, Limits{})
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != "xz dictionary" {
				t.Errorf("block %d asks for 4 GiB (size %d): err %v; want the xz dictionary limit", k+1, size, err)
			}
		}
	}
}
