package snapshot

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestManyDevices decodes ten device traces whose entries the last trace
// references again (testdata/gen/manydevices.py): the references to the
// ninth and tenth lists' entries go through the wide table. Fast path,
// generic machine and gopickle agree.
func TestManyDevices(t *testing.T) {
	data := readFixture(t, "manydevices.pickle")
	fast, _ := decodeBoth(t, data)
	ref, err := DecodeReference(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := canon(ref), canon(fast); !reflect.DeepEqual(a, b) {
		t.Fatalf("decoder differs from gopickle (-gopickle +fast):\n%s", cmp.Diff(a, b))
	}
	if len(fast.Traces) != 10 || len(fast.Traces[9]) != 126 {
		t.Fatalf("%d traces, the last of %d entries; want 10, the last of 126", len(fast.Traces), len(fast.Traces[len(fast.Traces)-1]))
	}
	for i, want := range []TraceEntry{fast.Traces[0][3], fast.Traces[1][4], fast.Traces[7][5], fast.Traces[8][6], fast.Traces[8][7], fast.Traces[9][8]} {
		if got := fast.Traces[9][120+i]; !reflect.DeepEqual(got, want) {
			t.Errorf("device 9 entry %d: %+v, want %+v", 120+i, got, want)
		}
	}
	m := runMachine(t, data, Limits{})
	if m.Stats().Wide == 0 || m.Stats().Batches == 0 {
		t.Errorf("%d wide handles, %d fast-path batches; want some of each", m.Stats().Wide, m.Stats().Batches)
	}
}

// TestMemoHeldCounted: values that only the memo keeps alive (memoized,
// then popped) are charged to the decoded-object budget, so a file of
// 5*10^6 empty lists, dicts or bytes values ends in the budget's error
// instead of holding a gigabyte (issue 28).
func TestMemoHeldCounted(t *testing.T) {
	head := []byte("\x80\x04}(\x8c\x08segments]\x8c\x0ddevice_traces]")
	for _, tt := range []struct {
		name string
		unit string
	}{
		{"lists", "]\x940"},
		{"dicts", "}\x940"},
		{"tuples", "K\x01\x85\x940"},
		{"bytes", "C\x00\x940"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			b.Write(head)
			for range 5_000_000 {
				b.WriteString(tt.unit)
			}
			b.WriteString("u.")
			_, err := Decode(bytes.NewReader(b.Bytes()))
			var le *LimitError
			if !errors.As(err, &le) || le.Limit != "decoded-object budget" {
				t.Fatalf("%d bytes of memoized %s: err %v, want the decoded-object budget's", b.Len(), tt.name, err)
			}
		})
	}
}
