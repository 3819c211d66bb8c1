package snapshot

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const fixtures = "../testdata/snapshots/"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBadInput feeds each kind of bad input named in issue 2 and field
// report 11 and checks for a one-line error (never a panic, never a hang).
func TestBadInput(t *testing.T) {
	real := readFixture(t, "mlp_train.pickle")
	nested := append([]byte{0x80, 0x04}, bytes.Repeat([]byte{']'}, 1_000_000)...)
	nestedAppend := []byte{0x80, 0x04, ']'}
	for i := 0; i < 1_000_000; i++ {
		nestedAppend = append(nestedAppend, ']', 'a')
	}
	nestedAppend = append(nestedAppend, '.')
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(real[:len(real)/2])
	zw.Close()
	tests := []struct {
		name    string
		in      []byte
		wantErr string
		notSnap bool
	}{
		{"empty", nil, "empty file", false},
		{"truncated mid-FRAME", real[:100], "truncated pickle", false},
		{"truncated before STOP", real[:len(real)-1], "truncated pickle", false},
		{"truncated gzip", gz.Bytes(), "truncated", false},
		{"random bytes", []byte("\x13\x37\xde\xad\xbe\xefrandom"), "not a pickle or JSON", true},
		{"text", []byte("hello world\n"), "not a pickle or JSON", true},
		{"pickle of a class", []byte("\x80\x02c__main__\nModel\nq\x00)\x81q\x01."), "Python class __main__.Model", true},
		{"stack global", []byte("\x80\x04\x8c\x05torch\x8c\x06Tensor\x93."), "Python class torch.Tensor", true},
		{"reduce", []byte("\x80\x02)R."), "builds Python objects", true},
		{"pickle of an int", []byte("\x80\x04K\x05."), "holds a int", true},
		{"pickle of a str", []byte("\x80\x04\x8c\x02hi."), "holds a str", true},
		{"dict of something else", []byte("\x80\x04}\x8c\x01a\x8c\x01b\x73."), "neither segments nor device_traces", true},
		{"segments is an int", []byte("\x80\x04}\x8c\x08segmentsK\x05s."), "segments: want list, got int", false},
		{"segment is a str", []byte("\x80\x04}\x8c\x08segments]\x8c\x01xas."), "segments[0]: want dict, got str", false},
		{"device_traces entries are ints", []byte("\x80\x04}\x8c\x0ddevice_traces]]K\x01aas."), "want trace entry dict, got int", false},
		{"4 GB string in a 10-byte file", []byte("\x80\x04X\xff\xff\xff\xff"), "truncated pickle", false},
		{"8-exabyte string", []byte("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7fxx"), "truncated pickle", false},
		{"4 GB LONG4", []byte("\x80\x04\x8b\xff\xff\xff\x7f"), "truncated pickle", false},
		{"a million nested lists, unfinished", nested, "truncated pickle", false},
		{"a million nested lists", nestedAppend, "segments[0]: want dict, got list", false},
		{"a million nested settings", deepSettings(), "over the stack depth limit", false},
		{"memo index never stored", []byte("\x80\x04h\x07."), "memo index 7", false},
		{"stack underflow", []byte("\x80\x04a."), "stack underflow", false},
		{"odd SETITEMS", []byte("\x80\x04}(K\x01u."), "odd number", false},
		{"protocol 1", []byte("}q\x00."), "protocol 0 or 1", true},
		{"protocol 9", []byte("\x80\x09}."), "unsupported pickle protocol 9", false},
		{"bad JSON", []byte(`{"segments": [`), "reading JSON", false},
		{"JSON of something else", []byte(`{"a": 1}`), "neither segments nor device_traces", true},
		{"invalid UTF-8", []byte("\x80\x04\x8c\x02\xff\xfe."), "not UTF-8", false},
		{"truncated xz", xzHead(), "reading xz: truncated compressed data", false},
		{"corrupt gzip header", []byte("\x1f\x8b\x08\x00garbage"), "reading gzip", false},
		{"LONG1 of length 0", []byte("\x80\x04}\x8c\x08segments]s\x8a\x00."), "holds a int", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Decode(bytes.NewReader(tt.in))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Decode succeeded (%d segments), want error containing %q", len(s.Segments), tt.wantErr)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantErr) {
				t.Errorf("error %q, want it to contain %q", msg, tt.wantErr)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error spans several lines: %q", msg)
			}
			if tt.notSnap != errors.Is(err, ErrNotSnapshot) {
				t.Errorf("errors.Is(err, ErrNotSnapshot) = %v, want %v (%v)", !tt.notSnap, tt.notSnap, err)
			}
		})
	}
}

// TestLoadNamesFile checks that errors name the file.
func TestLoadNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "snap.pickle")
	os.WriteFile(p, nil, 0o644)
	_, err := Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), p+": ") {
		t.Errorf("Load error %v, want it to start with the path", err)
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Load(dir) error %v, want a directory error", err)
	}
}

// TestEncodings decodes the same real snapshot in each encoding and checks
// they agree.
func TestEncodings(t *testing.T) {
	base, err := Decode(bytes.NewReader(readFixture(t, "mlp_train.pickle")))
	if err != nil {
		t.Fatal(err)
	}
	if base.Format.PickleProtocol != 4 {
		t.Errorf("protocol %d, want 4", base.Format.PickleProtocol)
	}
	for _, tt := range []struct {
		file        string
		proto       int
		compression string
	}{
		{"mlp_train.proto2.pickle", 2, ""},
		{"mlp_train.proto5.pickle", 5, ""},
		{"mlp_train.pickle.gz", 4, "gzip"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			s, err := Load(filepath.Join(fixtures, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if s.Format.PickleProtocol != tt.proto || s.Format.Compression != tt.compression {
				t.Errorf("format %+v, want protocol %d compression %q", s.Format, tt.proto, tt.compression)
			}
			a, b := canon(base), canon(s)
			if len(a.Traces[0]) != len(b.Traces[0]) || len(a.Segments) != len(b.Segments) {
				t.Fatalf("decoded %d entries and %d segments, want %d and %d", len(b.Traces[0]), len(b.Segments), len(a.Traces[0]), len(a.Segments))
			}
			for i := range a.Traces[0] {
				if !equalEntry(a.Traces[0][i], b.Traces[0][i]) {
					t.Fatalf("entry %d differs: %+v vs %+v", i, a.Traces[0][i], b.Traces[0][i])
				}
			}
		})
	}
}

func equalEntry(a, b canonEntry) bool {
	if a.TraceEntry != b.TraceEntry || a.Action != b.Action || len(a.Frames) != len(b.Frames) {
		return false
	}
	for i := range a.Frames {
		if a.Frames[i] != b.Frames[i] {
			return false
		}
	}
	return true
}

// TestNineByteLong: a stream of 2^64-1 is a 9-byte LONG1 (field report 1).
func TestNineByteLong(t *testing.T) {
	s, err := Load(filepath.Join(fixtures, "long1-9byte-stream.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Segments[0].Stream; got != 1<<64-1 {
		t.Errorf("segment stream %d, want 2^64-1", got)
	}
	if got := s.Traces[0][1].Stream; got != 1<<64-1 {
		t.Errorf("entry stream %d, want 2^64-1", got)
	}
}

// TestHostMemory: host_segments and host_traces (the pinned host
// allocator, pytorch/pytorch#182407) decode in the schema of segments and
// device_traces, apart from the device's own; device -1 is allowed there.
func TestHostMemory(t *testing.T) {
	s, err := Load(filepath.Join(fixtures, "host_memory.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Segments) != 0 || len(s.Traces) != 1 || len(s.Traces[0]) != 0 {
		t.Errorf("device: %d segments, traces %v; want none", len(s.Segments), s.Traces)
	}
	if len(s.HostSegments) != 3 || len(s.HostTraces) != 8 || !s.HasHostTraces {
		t.Fatalf("host: %d segments, %d entries; want 3, 8", len(s.HostSegments), len(s.HostTraces))
	}
	if seg := s.HostSegments[0]; seg.Device != -1 || seg.TotalSize != 1<<20 || seg.Blocks[0].State != StateActiveAllocated {
		t.Errorf("host_segments[0] = %+v", seg)
	}
	if e := s.HostTraces[1]; e.Action != ActionAlloc || e.Size != 1<<20 || len(s.Stack(e.Stack)) != 2 {
		t.Errorf("host_traces[1] = %+v", e)
	}
	// segment_alloc and free_completed carry no frames key (no context).
	if e := s.HostTraces[0]; e.Action != ActionSegmentAlloc || len(s.Stack(e.Stack)) != 0 {
		t.Errorf("host_traces[0] = %+v", e)
	}
}

// TestNewerFields: unknown keys and actions are kept and counted, not fatal.
func TestNewerFields(t *testing.T) {
	s, err := Load(filepath.Join(fixtures, "newer-fields.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, c := range s.Unknown {
		got[c.Name] = c.Count
	}
	// PyTorch writes host_segments and host_traces (pytorch/pytorch#182407)
	// in every snapshot, empty when host recording is off: known keys, and
	// no host memory.
	if s.HasHostTraces || !slices.Contains(s.TopLevelKeys, "host_traces") {
		t.Errorf("empty host keys: HasHostTraces %v, keys %v; want false and kept", s.HasHostTraces, s.TopLevelKeys)
	}
	for _, k := range []string{"device_traces[][].pool_id", "device_traces[][].internal_metadata"} {
		if got[k] == 0 {
			t.Errorf("unknown %q not reported (got %v)", k, got)
		}
	}
	if got["action:annotate"] != 0 {
		t.Errorf("annotate (pytorch/pytorch#190575) counted as unknown")
	}
	last := s.Traces[0][len(s.Traces[0])-1]
	if last.Action != ActionAnnotate || s.ActionName(last.Action) != "annotate" {
		t.Errorf("last action %v (%q), want annotate", last.Action, s.ActionName(last.Action))
	}
}

// TestJSON: the JSON form MemoryViz accepts.
func TestJSON(t *testing.T) {
	s, err := Load(filepath.Join(fixtures, "tiny.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Format.Encoding != "json" || len(s.Segments) != 1 || len(s.Traces[0]) != 2 {
		t.Fatalf("got %+v with %d segments", s.Format, len(s.Segments))
	}
	if err := s.CheckValid(); err != nil {
		t.Error(err)
	}
	if f := s.Frames[s.Stack(s.Traces[0][1].Stack)[0]]; f.Name != "step" || f.Line != 12 {
		t.Errorf("first frame %+v", f)
	}
}

// deepSettings is a snapshot whose allocator_settings nest a million dicts.
func deepSettings() []byte {
	b := []byte("\x80\x04}\x8c\x08segments]s\x8c\x12allocator_settings")
	for i := 0; i < 1_000_000; i++ {
		b = append(b, "}\x8c\x01k"...)
	}
	b = append(b, '}')
	for i := 0; i < 1_000_000; i++ {
		b = append(b, 's')
	}
	return append(b, "s."...)
}

// TestFields: the known keys a file holds are counted, so that a reader can
// tell the layout (PyTorch 2.0 block history, user_metadata, ...).
func TestFields(t *testing.T) {
	s, err := Load(filepath.Join(fixtures, "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want int
	}{
		{"device_traces[][].user_metadata", len(s.Traces[0])},
		{"device_traces[][].action", len(s.Traces[0])},
		{"segments[].frames", len(s.Segments)},
		{"segments[].blocks[].history", 0},
	} {
		if got := s.FieldCount(tt.path); got != tt.want {
			t.Errorf("FieldCount(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	blocks := 0
	for _, seg := range s.Segments {
		blocks += len(seg.Blocks)
	}
	if got := s.FieldCount("segments[].blocks[].address"); got != blocks {
		t.Errorf("block addresses %d, want %d", got, blocks)
	}
}

// xzHead is the first 32 bytes of an xz stream (made with Python's lzma).
func xzHead() []byte {
	return []byte("\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F\x02\x00!\x01\x16\x00\x00\x00t/\xe5\xa3\xe0\x99\xa0\x1b\xf9]\x00@")
}

// TestInconsistentWarns: a file whose blocks do not tile their segment
// decodes with a warning, not an error.
func TestInconsistentWarns(t *testing.T) {
	// {"segments": [{"total_size": -5, "blocks": []}]}
	s, err := Decode(bytes.NewReader([]byte("\x80\x04}\x8c\x08segments](}(\x8c\ntotal_sizeJ\xfb\xff\xff\xff\x8c\x06blocks]ues.")))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "negative total_size") {
		t.Errorf("warnings %q, want one about the negative total_size", s.Warnings)
	}
}

// TestNoRequestedSize: an active block with neither requested_size nor a
// PyTorch 2.0 history[0].real_size takes its size as its requested size,
// and its device is listed in NoRequestedSize (analyze then calls the
// device's requested sizes unknown); an inactive block without one, or a
// 2.0 history's real_size, lists nothing.
func TestNoRequestedSize(t *testing.T) {
	const seg = `{"device": %d, "address": %d, "total_size": 2097152, "segment_type": "small", "blocks": [%s]}`
	for _, tt := range []struct {
		name  string
		json  string
		want  []int
		reqs0 int64 // RequestedSize of the first block
	}{
		{"requested_size", fmt.Sprintf(`{"segments": [`+seg+`]}`, 0, 1<<21,
			`{"size": 2097152, "requested_size": 100, "state": "active_allocated"}`), nil, 100},
		{"none, active", fmt.Sprintf(`{"segments": [`+seg+`, `+seg+`]}`, 0, 1<<21,
			`{"size": 2097152, "requested_size": 100, "state": "active_allocated"}`, 1, 1<<22,
			`{"size": 2097152, "state": "active_pending_free"}`), []int{1}, 100},
		{"none, inactive", fmt.Sprintf(`{"segments": [`+seg+`]}`, 0, 1<<21,
			`{"size": 2097152, "state": "inactive"}`), nil, 2097152},
		{"history real_size", fmt.Sprintf(`{"segments": [`+seg+`]}`, 0, 1<<21,
			`{"size": 2097152, "state": "active_allocated", "history": [{"addr": 2097152, "real_size": 7}]}`), nil, 7},
		{"none, two devices", fmt.Sprintf(`{"segments": [`+seg+`, `+seg+`]}`, 3, 1<<21,
			`{"size": 2097152, "state": "active_allocated"}`, 0, 1<<22,
			`{"size": 2097152, "state": "active_allocated"}`), []int{0, 3}, 2097152},
	} {
		s, err := Decode(strings.NewReader(tt.json))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(s.NoRequestedSize, tt.want) {
			t.Errorf("%s: NoRequestedSize %v, want %v", tt.name, s.NoRequestedSize, tt.want)
		}
		if got := s.Segments[0].Blocks[0].RequestedSize; got != tt.reqs0 {
			t.Errorf("%s: first block's RequestedSize %d, want %d", tt.name, got, tt.reqs0)
		}
	}
}
