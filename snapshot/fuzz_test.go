package snapshot

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
)

// FuzzDecode checks that Decode never panics or hangs, that what it accepts
// is valid, and that it agrees with the gopickle reference decoder whenever
// both accept an input. Seeds: the bundled fixtures and small real
// snapshots; crashers found are kept in testdata/fuzz/FuzzDecode.
//
//	go test -fuzz FuzzDecode -fuzztime 60s ./snapshot
func FuzzDecode(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(fixtures, "*"))
	if dir := corpus.Find(f); dir != "" {
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
		checkBudgets(t, data)
		s, err := Decode(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "internal decoder fault") {
				t.Fatal(err)
			}
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

// fuzzLimits are tight limits, so that the fuzzer meets them often.
var fuzzLimits = Limits{MaxStack: 1 << 12, MaxString: 1 << 12, ObjectBudget: 1 << 20, MaxDecompressed: 1 << 22}

// checkBudgets decodes data under fuzzLimits: the decoder never panics,
// a limit passed is a *LimitError, and what it returns stays within the
// budget: the trace entries, blocks and segments of the model cost at most
// ObjectBudget plus BudgetPerByte bytes per byte of the decoded stream (a
// shared list of entries or blocks counted once).
func checkBudgets(t *testing.T, data []byte) {
	t.Helper()
	s, err := DecodeLimits(bytes.NewReader(data), fuzzLimits)
	if err != nil {
		if strings.Contains(err.Error(), "internal decoder fault") {
			t.Fatal(err)
		}
		var le *LimitError
		if strings.Contains(err.Error(), "over the ") && strings.Contains(err.Error(), " limit") && !errors.As(err, &le) {
			t.Fatalf("a limit error that is not a *LimitError: %v", err)
		}
		return
	}
	var cost int64
	seen := map[*TraceEntry]bool{}
	for _, tr := range s.Traces {
		if len(tr) > 0 && !seen[&tr[0]] {
			seen[&tr[0]] = true
			cost += int64(len(tr)) * entryBytes
		}
	}
	blocks := map[*Block]bool{}
	for i := range s.Segments {
		cost += segmentBytes
		if b := s.Segments[i].Blocks; len(b) > 0 && !blocks[&b[0]] {
			blocks[&b[0]] = true
			cost += int64(len(b)) * blockBytes
		}
	}
	read := int64(len(data))
	if s.Format.Compression != "" {
		read = s.Format.Bytes + readBuffer // what the decoder read ahead
	}
	if allow := fuzzLimits.ObjectBudget + BudgetPerByte*read; cost > allow {
		t.Fatalf("the model costs %d bytes from %d bytes of input, over the budget's %d", cost, len(data), allow)
	}
}

// pickleTokens is the fuzzer's dictionary: the opcodes (with arguments)
// and the keys snapshots use. FuzzDecodeOps builds pickles from them.
var pickleTokens = [][]byte{
	[]byte("}"), []byte("]"), []byte(")"), []byte("("), []byte("u"), []byte("e"), []byte("a"), []byte("s"),
	[]byte("d"), []byte("l"), []byte("t"), []byte("0"), []byte("1"), []byte("2"), []byte("\x85"), []byte("\x86"),
	[]byte("\x87"), []byte("\x94"), []byte("N"), []byte("\x88"), []byte("\x89"), []byte("."),
	[]byte("h\x00"), []byte("h\x01"), []byte("h\x02"), []byte("h\x03"), []byte("h\x05"), []byte("h\x08"),
	[]byte("q\x00"), []byte("q\x01"), []byte("q\x02"), []byte("q\x03"), []byte("q\x05"), []byte("q\x08"),
	[]byte("j\x01\x00\x00\x00"), []byte("r\x01\x00\x00\x00"), []byte("r\xff\xff\x00\x00"), []byte("j\xff\xff\x00\x00"),
	[]byte("r\x00\x00\x01\x00"), []byte("K\x00"), []byte("K\x01"), []byte("M\x00\x02"), []byte("J\x00\x00\x00\x10"),
	[]byte("J\xff\xff\xff\xff"), []byte("\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00"), []byte("\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x80"),
	[]byte("G\x3f\xf0\x00\x00\x00\x00\x00\x00"), []byte("X\xff\xff\xff\x7f"), []byte("\x8c\x00"),
	[]byte("\x8c\x08segments"), []byte("\x8c\x0ddevice_traces"), []byte("\x8c\x12allocator_settings"),
	[]byte("\x8c\x14external_annotations"), []byte("\x8c\x06action"), []byte("\x8c\x05alloc"),
	[]byte("\x8c\x0dfree_completed"), []byte("\x8c\x0dsegment_alloc"), []byte("\x8c\x04addr"), []byte("\x8c\x04size"),
	[]byte("\x8c\x06stream"), []byte("\x8c\x07time_us"), []byte("\x8c\x06frames"), []byte("\x8c\x06blocks"),
	[]byte("\x8c\x07address"), []byte("\x8c\x0atotal_size"), []byte("\x8c\x05state"), []byte("\x8c\x10active_allocated"),
	[]byte("\x8c\x08inactive"), []byte("\x8c\x0erequested_size"), []byte("\x8c\x06device"), []byte("\x8c\x08filename"),
	[]byte("\x8c\x04line"), []byte("\x8c\x04name"), []byte("\x8c\x0emax_split_size"), []byte("\x8c\x05\x1b[2Jx"),
}

// FuzzDecodeOps fuzzes the pickle machine with pickles made of
// pickleTokens (each input byte picks one), under tight limits, and
// compares what it accepts with the gopickle reference decoder: a
// dictionary-driven fuzzer that reaches the memo, DUP/POP and nesting
// much faster than byte flips do.
//
//	go test -fuzz FuzzDecodeOps -fuzztime 60s ./snapshot
func FuzzDecodeOps(f *testing.F) {
	f.Add([]byte{0, 50, 1, 51, 1, 3, 0, 3, 54, 55, 4, 6, 6, 4, 5})
	f.Add([]byte{0, 50, 1, 51, 1, 28, 3, 0, 3, 54, 55, 4, 17, 6, 22, 6, 22, 6, 4, 5})
	f.Add([]byte{0, 3, 50, 1, 3, 0, 3, 60, 41, 4, 29, 61, 26, 4, 12, 13, 13, 6, 4})
	f.Fuzz(func(t *testing.T, ops []byte) {
		b := []byte("\x80\x04")
		for _, o := range ops {
			b = append(b, pickleTokens[int(o)%len(pickleTokens)]...)
		}
		b = append(b, '.')
		checkBudgets(t, b)
		s, err := Decode(bytes.NewReader(b))
		if err != nil {
			return
		}
		ref, rerr := DecodeReference(bytes.NewReader(b))
		if rerr == nil && !reflect.DeepEqual(canon(ref), canon(s)) {
			t.Fatalf("fast decoder and gopickle disagree")
		}
	})
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
