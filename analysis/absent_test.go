package analysis

import (
	"errors"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// TestAbsent resolves moments a device's trace lacks: the oom of a device
// without one names the devices that have one, another absent moment
// keeps steps' message, and a moment that does not apply is no absence.
func TestAbsent(t *testing.T) {
	s := &snapshot.Snapshot{
		Traces: [][]snapshot.TraceEntry{
			{{Action: snapshot.ActionAlloc, Addr: 1 << 20, Size: 512}},
			{{Action: snapshot.ActionAlloc, Addr: 2 << 20, Size: 512}, {Action: snapshot.ActionOOM, Size: 1 << 30}},
		},
	}
	resolve := func(m steps.Moment) error {
		r, err := replay.Run(s, 0, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Resolve(s, r)
		return err
	}
	err := resolve(steps.Moment{Kind: steps.MomentOOM})
	a := Absent(s, 0, steps.Moment{Kind: steps.MomentOOM}, err)
	if a == nil || a.Error() != "device 0 has no oom entry; devices with one: 1 (use --device 1)" {
		t.Errorf("Absent(oom) = %v (from %v), want device 0's with device 1 named", a, err)
	}
	if a := Absent(s, 0, steps.Moment{}, errors.New("read error")); a != nil {
		t.Errorf("Absent of a read error = %v, want nil", a)
	}
	one := &snapshot.Snapshot{Traces: s.Traces[:1]}
	if got := NoOOM(one, 0).Error(); got != "device 0 has no oom entry" {
		t.Errorf("NoOOM of one device = %q", got)
	}
	two := &snapshot.Snapshot{Traces: [][]snapshot.TraceEntry{s.Traces[0], s.Traces[0]}}
	if got := NoOOM(two, 1).Error(); got != "device 1 has no oom entry, nor has any other device" {
		t.Errorf("NoOOM of two devices = %q", got)
	}
}
