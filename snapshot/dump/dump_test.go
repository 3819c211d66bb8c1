package dump_test

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapview/snapview/internal/corpus"

	"github.com/snapview/snapview/snapshot"
	"github.com/snapview/snapview/snapshot/dump"
)

// view is what a written file must give back when decoded again: the
// model with stacks and strings resolved (their ids may differ).
type view struct {
	Legacy, HasDeviceTraces, HasAnnotations bool
	Segments                                []segView
	Traces                                  [][]entryView
	Settings                                *snapshot.AllocatorSettings
	Annotations                             []snapshot.Annotation
}

type segView struct {
	Seg    snapshot.Segment
	Stack  []snapshot.Frame
	Blocks []blockView
}

type blockView struct {
	B     snapshot.Block
	Stack []snapshot.Frame
}

type entryView struct {
	E                     snapshot.TraceEntry
	Action, Compile, Meta string
	Stack                 []snapshot.Frame
}

func frames(s *snapshot.Snapshot, id snapshot.StackID) []snapshot.Frame {
	var out []snapshot.Frame
	for _, f := range s.Stack(id) {
		out = append(out, s.Frames[f])
	}
	return out
}

func viewOf(s *snapshot.Snapshot) view {
	v := view{Legacy: s.Legacy, HasDeviceTraces: s.HasDeviceTraces, HasAnnotations: s.HasAnnotations, Settings: s.Settings, Annotations: s.Annotations}
	for _, sg := range s.Segments {
		sv := segView{Seg: sg, Stack: frames(s, sg.Stack)}
		sv.Seg.Blocks, sv.Seg.Stack = nil, 0
		for _, b := range sg.Blocks {
			bv := blockView{B: b, Stack: frames(s, b.Stack)}
			bv.B.Stack = 0
			sv.Blocks = append(sv.Blocks, bv)
		}
		v.Segments = append(v.Segments, sv)
	}
	for _, t := range s.Traces {
		var tv []entryView
		for _, e := range t {
			ev := entryView{E: e, Action: s.ActionName(e.Action), Compile: s.Strings[e.CompileContext], Meta: s.Strings[e.UserMetadata], Stack: frames(s, e.Stack)}
			ev.E.Stack, ev.E.CompileContext, ev.E.UserMetadata, ev.E.Action = 0, 0, 0, 0
			tv = append(tv, ev)
		}
		v.Traces = append(v.Traces, tv)
	}
	return v
}

// diffViews says where a and b first differ ("" when they do not):
// reflect.DeepEqual item by item, go-cmp for the first item that differs
// (go-cmp over a whole trace of 100k entries takes minutes).
func diffViews(a, b view) string {
	if reflect.DeepEqual(a, b) {
		return ""
	}
	if len(a.Segments) != len(b.Segments) {
		return fmt.Sprintf("%d segments, want %d", len(b.Segments), len(a.Segments))
	}
	for i := range a.Segments {
		if !reflect.DeepEqual(a.Segments[i], b.Segments[i]) {
			return fmt.Sprintf("segment %d (-want +got):\n%s", i, cmp.Diff(a.Segments[i], b.Segments[i]))
		}
	}
	if len(a.Traces) != len(b.Traces) {
		return fmt.Sprintf("%d device traces, want %d", len(b.Traces), len(a.Traces))
	}
	for d := range a.Traces {
		if len(a.Traces[d]) != len(b.Traces[d]) {
			return fmt.Sprintf("device %d: %d entries, want %d", d, len(b.Traces[d]), len(a.Traces[d]))
		}
		for i := range a.Traces[d] {
			if !reflect.DeepEqual(a.Traces[d][i], b.Traces[d][i]) {
				return fmt.Sprintf("device %d entry %d (-want +got):\n%s", d, i, cmp.Diff(a.Traces[d][i], b.Traces[d][i]))
			}
		}
	}
	a.Segments, b.Segments, a.Traces, b.Traces = nil, nil, nil, nil
	return cmp.Diff(a, b)
}

// TestRoundTrip writes every snapshot of testdata/snapshots and every
// torch 2.11 and public file of the corpus as a pickle and as JSON,
// decodes each again and wants the same model (PyTorch 2.0's layout
// aside).
func TestRoundTrip(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "snapshots", "*.pickle"))
	if len(files) == 0 {
		t.Fatal("no snapshots in testdata/snapshots")
	}
	if dir := corpus.Find(t); dir != "" {
		files = append(files, corpus.Match(t, dir, "torch2.11/*/snapshot.pickle", 15)...)
		files = append(files, corpus.Match(t, dir, "public/*.pickle", 30)...)
	}
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		if s.FieldCount("segments[].blocks[].history") > 0 {
			continue // PyTorch 2.0's layout is written in 2.11's: see TestLayout20
		}
		want := viewOf(s)
		for _, enc := range []struct {
			name  string
			write func(*bytes.Buffer, *snapshot.Snapshot) error
		}{
			{"pickle", func(b *bytes.Buffer, s *snapshot.Snapshot) error { return dump.Pickle(b, s) }},
			{"json", func(b *bytes.Buffer, s *snapshot.Snapshot) error { return dump.JSON(b, s) }},
		} {
			var b bytes.Buffer
			if err := enc.write(&b, s); err != nil {
				t.Fatalf("%s: %s: %v", f, enc.name, err)
			}
			got, err := snapshot.Decode(&b)
			if err != nil {
				t.Fatalf("%s: %s: decoding what was written: %v", f, enc.name, err)
			}
			if d := diffViews(want, viewOf(got)); d != "" {
				t.Errorf("%s: %s: the written file reads back different: %s", filepath.Base(filepath.Dir(f))+"/"+filepath.Base(f), enc.name, d)
			}
		}
	}
}

// TestPythonReadsSame loads the original and the written file (pickle and
// JSON) with python3's pickle and json modules and wants equal objects.
func TestPythonReadsSame(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	// One file of each layout and option (python3 compares whole objects:
	// minutes on the larger files).
	var files []string
	for _, rel := range []string{
		"torch2.11/annotations/snapshot.pickle", "torch2.11/no_context/snapshot.pickle", "torch2.11/oom/snapshot.pickle",
		"torch2.11/expandable/snapshot.pickle", "torch2.11/cuda_graph/snapshot.pickle", "torch2.11/legacy_segments/snapshot.pickle",
		"torch2.11/state_only/snapshot.pickle", "torch2.11/skip_free_requested/snapshot.pickle", "torch2.11/stacks_all/snapshot.pickle",
		"public/p07-single-orphan-free.pickle", "public/p17-snapshot-marker-event.pickle", "public/p19-events-without-frames-key.pickle",
		"public/p03-tiny-2dev-expandable.pickle", "public/p14-legacy-list-dev1.pickle",
	} {
		files = append(files, corpus.Path(t, rel))
	}
	dir := t.TempDir()
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"out.pickle", "out.json"} {
			var b bytes.Buffer
			write := dump.Pickle
			if strings.HasSuffix(name, ".json") {
				write = dump.JSON
			}
			if err := write(&b, s); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, name)
			if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := exec.Command(py, "testdata/pyequal.py", f, out).CombinedOutput()
			if err != nil || !bytes.HasPrefix(res, []byte("SAME")) {
				t.Errorf("%s as %s: python3 reads another object: %v\n%s", f, name, err, res)
			}
		}
	}
}

// TestIntegers writes the integers a pickle encodes in each of its forms
// (BININT1, BININT2, BININT, LONG1 of 5 to 9 bytes) and reads them back.
func TestIntegers(t *testing.T) {
	addrs := []uint64{0, 255, 256, 65535, 65536, math.MaxInt32, math.MaxInt32 + 1, 1 << 40, 0x7fff_ffff_ffff_ffff, 0x8000_0000_0000_0000, math.MaxUint64}
	sizes := []int64{-1, -128, -129, -32768, math.MinInt32, math.MinInt32 - 1, math.MinInt64, math.MaxInt64}
	s := &snapshot.Snapshot{HasDeviceTraces: true, Stacks: [][]snapshot.FrameID{nil}, Strings: []string{""}}
	var tr []snapshot.TraceEntry
	for i, a := range addrs {
		tr = append(tr, snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: snapshot.Addr(a), Size: sizes[i%len(sizes)], Stream: a, Flags: snapshot.FlagAddr})
	}
	s.Traces = [][]snapshot.TraceEntry{tr}
	var b bytes.Buffer
	if err := dump.Pickle(&b, s); err != nil {
		t.Fatal(err)
	}
	got, err := snapshot.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got.Traces[0] {
		if e.Addr != tr[i].Addr || e.Size != tr[i].Size || e.Stream != tr[i].Stream {
			t.Errorf("entry %d: got addr %d size %d stream %d, want %d %d %d", i, e.Addr, e.Size, e.Stream, tr[i].Addr, tr[i].Size, tr[i].Stream)
		}
	}
}
