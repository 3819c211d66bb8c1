package frames

import (
	"strings"

	"github.com/snapview/snapview/snapshot"
)

// KeyFrames appends to dst the frames of a stack (innermost first) that
// make its group key, the rule `leaks` and `diff` share: with fold, the
// user's frames (kinds[f] == FrameUser) when the stack has any; else, and
// for a stack without user frames, every frame but the unwinder's and the
// interpreter's (FrameNoise, which _memory_viz's _frame_filter drops). It
// reports whether the key is made of user frames only.
func KeyFrames(dst, frames []snapshot.FrameID, kinds []FrameKind, fold bool) ([]snapshot.FrameID, bool) {
	if fold {
		n := len(dst)
		for _, f := range frames {
			if kinds[f] == FrameUser {
				dst = append(dst, f)
			}
		}
		if len(dst) > n {
			return dst, true
		}
	}
	for _, f := range frames {
		if kinds[f] != FrameNoise {
			dst = append(dst, f)
		}
	}
	return dst, false
}

// StackKeys gives each stack of one snapshot a key that another snapshot's
// stacks can be matched against: the text ("filename:line name", see
// [FrameText]) of its key frames (see keyFrames), one per line, innermost
// first. Two files of the same program give equal keys to the same call
// path; stack ids never match across files. The empty key is the stack of
// allocations recorded without frames.
type StackKeys struct {
	s     *snapshot.Snapshot
	kinds []FrameKind
	fold  bool
	keys  []string
	done  []bool
	buf   []snapshot.FrameID
}

// NewStackKeys returns the keys of s's stacks; fold keys by user frames
// (leaks --fold), else by whole stacks.
func NewStackKeys(s *snapshot.Snapshot, fold bool) *StackKeys {
	n := max(1, len(s.Stacks))
	return &StackKeys{s: s, kinds: FrameKinds(s), fold: fold, keys: make([]string, n), done: make([]bool, n)}
}

// Key returns the key of stack id (computed once).
func (k *StackKeys) Key(id snapshot.StackID) string {
	if id < 0 || int(id) >= len(k.keys) {
		id = snapshot.NoStack
	}
	if k.done[id] {
		return k.keys[id]
	}
	k.buf, _ = KeyFrames(k.buf[:0], k.s.Stack(id), k.kinds, k.fold)
	var b strings.Builder
	for i, f := range k.buf {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(FrameText(k.s.Frames[f]))
	}
	k.keys[id], k.done[id] = b.String(), true
	return k.keys[id]
}

// Frames returns the key frames of stack id, innermost first.
func (k *StackKeys) Frames(id snapshot.StackID) []snapshot.Frame {
	if id < 0 || int(id) >= len(k.keys) {
		return nil
	}
	fr, _ := KeyFrames(nil, k.s.Stack(id), k.kinds, k.fold)
	out := make([]snapshot.Frame, len(fr))
	for i, f := range fr {
		out[i] = k.s.Frames[f]
	}
	return out
}
