package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// canonical is a Snapshot with every StackID resolved to its frames, so
// that two decoders that intern in different orders compare equal.
type canonical struct {
	Legacy          bool
	Segments        []canonSegment
	Traces          [][]canonEntry
	HasDeviceTraces bool
	Settings        *AllocatorSettings
	Annotations     []Annotation
	TopLevelKeys    []string
	Unknown         []Count
	Warnings        []string
}

type canonSegment struct {
	Segment
	Frames []Frame
	Blocks []canonBlock
}

type canonBlock struct {
	Block
	Frames []Frame
}

type canonEntry struct {
	TraceEntry
	Frames         []Frame
	Action         string
	CompileContext string
	UserMetadata   string
}

func canon(s *Snapshot) canonical {
	frames := func(id StackID) []Frame {
		var out []Frame
		for _, f := range s.Stack(id) {
			out = append(out, s.Frames[f])
		}
		return out
	}
	c := canonical{Legacy: s.Legacy, HasDeviceTraces: s.HasDeviceTraces, Settings: s.Settings,
		Annotations: s.Annotations, TopLevelKeys: s.TopLevelKeys, Unknown: s.Unknown, Warnings: s.Warnings}
	for _, seg := range s.Segments {
		cs := canonSegment{Segment: seg, Frames: frames(seg.Stack)}
		cs.Segment.Stack, cs.Segment.Blocks = 0, nil
		for _, b := range seg.Blocks {
			cb := canonBlock{Block: b, Frames: frames(b.Stack)}
			cb.Block.Stack = 0
			cs.Blocks = append(cs.Blocks, cb)
		}
		c.Segments = append(c.Segments, cs)
	}
	for _, tr := range s.Traces {
		var ct []canonEntry
		for _, e := range tr {
			ce := canonEntry{TraceEntry: e, Frames: frames(e.Stack), Action: s.ActionName(e.Action),
				CompileContext: s.Strings[e.CompileContext], UserMetadata: s.Strings[e.UserMetadata]}
			ce.TraceEntry.Stack, ce.TraceEntry.Action, ce.TraceEntry.CompileContext, ce.TraceEntry.UserMetadata = 0, 0, 0, 0
			ct = append(ct, ce)
		}
		c.Traces = append(c.Traces, ct)
	}
	return c
}

// TestDecodeMatchesGopickle checks the fast decoder against gopickle on
// every real snapshot in ../shared.
func TestDecodeMatchesGopickle(t *testing.T) {
	for _, f := range realFiles(t) {
		rel, _ := filepath.Rel(sharedSnapshots(t), f)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fast, err := Decode(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			ref, err := DecodeReference(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("gopickle: %v", err)
			}
			a, b := canon(ref), canon(fast)
			if reflect.DeepEqual(a, b) {
				return
			}
			if d := cmp.Diff(a, b); d != "" {
				t.Errorf("fast decoder differs from gopickle (-gopickle +fast):\n%s", d)
			}
		})
	}
}
