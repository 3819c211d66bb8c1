package replay

import (
	"reflect"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	. "github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/snapshot"
)

// twinsSnap returns a snapshot of five devices: 0, 2 and 3 record the
// same trace and segment (3 with its own copy of the entries), 1 another,
// and 4 the same as 0 but with a record_function annotation.
func twinsSnap() *snapshot.Snapshot {
	trace := []snapshot.TraceEntry{
		Ev(SegAl, SegBase, 2*MiB), Ev(Alloc, SegBase, 1000), Ev(Alloc, SegBase+1024, 600),
		Ev(FreeRq, SegBase, 1000), Ev(FreeOK, SegBase, 1000),
	}
	other := slices.Clone(trace)
	other[2].Size = 700
	seg := func(d int, req int64) snapshot.Segment {
		sg := Seg(SegBase, 2*MiB, "small", Blk(SegBase, 1024, 0, Inact), Blk(SegBase+1024, 1024, req, AAlloc), Blk(SegBase+2048, 2*MiB-2048, 0, Inact))
		sg.Device = d
		return sg
	}
	s := Snap(nil)
	s.Traces = [][]snapshot.TraceEntry{trace, other, trace, slices.Clone(trace), trace}
	s.Segments = []snapshot.Segment{seg(0, 600), seg(1, 700), seg(2, 600), seg(3, 600), seg(4, 600)}
	s.Annotations = []snapshot.Annotation{{Stage: "START", Name: "step", Device: 4, TimeUS: 1}}
	s.HasAnnotations = true
	return s
}

// TestTwins: devices with the same entries and segments (their Device
// aside) share the first one's replay, and the copy Twin makes is what
// replaying the device itself gives, field by field.
func TestTwins(t *testing.T) {
	s := twinsSnap()
	if got, want := Twins(s), []int32{0, 1, 0, 0, 4}; !slices.Equal(got, want) {
		t.Fatalf("Twins = %v, want %v", got, want)
	}
	for _, opt := range []Options{{}, {Mode: Peaks}, {States: []int{1, 3}, PeakState: true}} {
		first, err := Run(s, 0, opt)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []int{2, 3} {
			own, err := Run(s, d, opt)
			if err != nil {
				t.Fatal(err)
			}
			if twin := first.Twin(d); !reflect.DeepEqual(twin, own) {
				t.Errorf("mode %v: device %d: Twin differs from its own replay (-twin +own):\n%.2000s", opt.Mode, d,
					cmp.Diff(twin, own, cmp.AllowUnexported(Result{}, replayConfig{}), cmpopts.IgnoreUnexported(snapshot.Snapshot{})))
			}
			if d == 2 {
				a, _ := own.StateAt(3)
				b, _ := first.Twin(d).StateAt(3)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("device %d: StateAt(3) differs", d)
				}
			}
		}
	}
	one := twinsSnap()
	one.Traces = one.Traces[:2]
	one.Segments = one.Segments[:2]
	if got := Twins(one); got != nil {
		t.Errorf("Twins of two different devices = %v, want nil", got)
	}
}
