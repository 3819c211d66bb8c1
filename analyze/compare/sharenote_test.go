package compare

import (
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// TestShareNote: the share is of the growth (or drop) the stacks that
// moved with the net change add up to, never more than 100%, and the net
// change is named beside it when other stacks moved the other way (the
// ddp ranks: +64 MiB new, +32 MiB grown, -32 MiB gone is 67% of +96 MiB,
// not 100% of the net +64 MiB).
func TestShareNote(t *testing.T) {
	const mib = 1 << 20
	stack := func(name string, status StackStatus, delta int64) StackDiff {
		return StackDiff{Key: name, Frames: []snapshot.Frame{{Filename: "gpurec.py", Line: 1, Name: name}}, DeltaBytes: delta, Status: status}
	}
	ddp := []StackDiff{stack("ddp_new", StackNew, 64*mib), stack("ddp_grown", StackGrown, 32*mib), stack("ddp_gone", StackGone, -32*mib)}
	for _, c := range []struct {
		name   string
		stacks []StackDiff
		net    int64
		want   string
	}{
		{"growth beside a drop", ddp, 64 * mib,
			"67% of the allocated growth (+96.0 MiB by 2 stacks; net change +64.0 MiB) is one stack's: gpurec.py:1 ddp_new, new +64.0 MiB"},
		{"drop beside a growth", []StackDiff{stack("a", StackGone, -64*mib), stack("b", StackShrunk, -32*mib), stack("c", StackNew, 32*mib)}, -64 * mib,
			"67% of the allocated drop (-96.0 MiB by 2 stacks; net change -64.0 MiB) is one stack's: gpurec.py:1 a, gone -64.0 MiB"},
		{"one stack, all of it", []StackDiff{stack("a", StackGrown, 21*mib), stack("b", StackSame, 0)}, 21 * mib,
			"100% of the allocated growth (+21.0 MiB) is one stack's: gpurec.py:1 a, grown +21.0 MiB"},
		{"the largest against the net", []StackDiff{stack("a", StackGone, -100*mib), stack("b", StackGrown, 60*mib), stack("c", StackNew, 50*mib)}, 10 * mib,
			"55% of the allocated growth (+110.0 MiB by 2 stacks; net change +10.0 MiB) is one stack's: gpurec.py:1 b, grown +60.0 MiB"},
		{"no stack holds half", []StackDiff{stack("a", StackGrown, 10*mib), stack("b", StackGrown, 10*mib), stack("c", StackGrown, 10*mib)}, 30 * mib, ""},
		{"no net change", ddp[1:], 0, ""},
	} {
		if got := shareNote(c.stacks, c.net); got != c.want {
			t.Errorf("%s: shareNote = %q, want %q", c.name, got, c.want)
		}
	}
}
