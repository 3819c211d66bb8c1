package slice_test

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/slice"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/benchfile"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
	"github.com/snapview/snapview/snapshot/dump"
)

// windows are the windows each device is cut at: the whole trace, its
// halves and middle, a tail, a single entry, and around the peak.
func windows(dev, n, peak int) []slice.Window {
	ws := []slice.Window{
		{dev, 0, n - 1}, {dev, 0, n / 2}, {dev, n / 2, n - 1}, {dev, n / 4, 3 * n / 4},
		{dev, n / 3, n / 3}, {dev, 2 * n / 3, n - 2},
	}
	if peak >= 0 {
		ws = append(ws, slice.Around(dev, peak, 1+n/5, n))
	}
	var out []slice.Window
	for _, w := range ws {
		if w.From >= 0 && w.From <= w.To && w.To < n {
			out = append(out, w)
		}
	}
	return out
}

// check cuts w out of s (replayed as r), writes it as a pickle, reads it
// back and checks what the issue asks of a slice:
//
//   - snapview's replay of the slice ends in its segments (Check.Equal)
//     and meets no inconsistency;
//   - it starts in the original's state before entry From (the seeded
//     state, block for block) and follows the original's figures
//     (allocated, active, reserved and requested bytes) entry for entry;
//   - its current figures at the end are the original's after entry To
//     (summary of the slice = state --at entry:To);
//   - its trace is the original's entries From to To.
//
// Where the start cannot be told from the slice (see slice.Notes: a
// window without free_requested entries, a block older than the window
// that the allocator did not split), the start and the figures before
// the end are not compared, and the difference is added to limits.
func check(s *snapshot.Snapshot, r *replay.Result, w slice.Window, limits *[]string) error {
	sl, err := slice.Cut(s, r, w)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := dump.Pickle(&b, sl); err != nil {
		return err
	}
	got, err := snapshot.Decode(&b)
	if err != nil {
		return fmt.Errorf("decoding the slice: %v", err)
	}
	got, _ = replay.Complete(got)
	rs, err := replay.Run(got, w.Device, replay.Options{})
	if err != nil {
		return fmt.Errorf("replaying the slice: %v", err)
	}
	if !rs.Check.Equal {
		return fmt.Errorf("the slice's replay does not end in its segments: %s", strings.Join(rs.Check.Differences, "; "))
	}
	before, err := r.StateAt(w.From - 1)
	if err != nil {
		return err
	}
	exactStart := true
	if d, limit := diffSegments(slice.Segments(before), rs.InitialState()); d != "" {
		if !limit && !rs.SkipsFreeRequested {
			return fmt.Errorf("the slice's state before its first entry differs from the original's before entry %d: %s", w.From, d)
		}
		// A limit of the format, not of the slice (see slice.Notes).
		exactStart = false
		*limits = append(*limits, d)
	}
	ro, err := replay.Run(s, w.Device, replay.Options{})
	if err != nil {
		return err
	}
	for k := range rs.Allocated {
		if !exactStart {
			break
		}
		i := w.From + k
		if rs.Allocated[k] != ro.Allocated[i] || rs.Active[k] != ro.Active[i] || rs.Reserved[k] != ro.Reserved[i] || rs.Requested[k] != ro.Requested[i] {
			return fmt.Errorf("after the slice's entry %d (entry %d): allocated/active/reserved/requested %d/%d/%d/%d, the original %d/%d/%d/%d",
				k, i, rs.Allocated[k], rs.Active[k], rs.Reserved[k], rs.Requested[k], ro.Allocated[i], ro.Active[i], ro.Reserved[i], ro.Requested[i])
		}
	}
	at, err := r.StateAt(w.To)
	if err != nil {
		return err
	}
	if d := diffCurrent(&at.Stats, &rs.Stats); d != "" {
		return fmt.Errorf("the slice's current figures differ from the original's at entry %d: %s", w.To, d)
	}
	want := s.Traces[w.Device][w.From : w.To+1]
	gt := got.Traces[w.Device]
	if len(gt) != len(want) {
		return fmt.Errorf("the slice has %d entries, want %d", len(gt), len(want))
	}
	for k := range want {
		a, b := want[k], gt[k]
		if a.Action != b.Action && s.ActionName(a.Action) != got.ActionName(b.Action) ||
			a.Addr != b.Addr || a.Size != b.Size || a.Stream != b.Stream || a.TimeUS != b.TimeUS || a.Flags != b.Flags ||
			s.Strings[a.CompileContext] != got.Strings[b.CompileContext] || s.Strings[a.UserMetadata] != got.Strings[b.UserMetadata] ||
			!reflect.DeepEqual(frames(s, a.Stack), frames(got, b.Stack)) {
			return fmt.Errorf("the slice's entry %d differs from entry %d: %+v, want %+v", k, w.From+k, b, a)
		}
	}
	return nil
}

func frames(s *snapshot.Snapshot, id snapshot.StackID) []snapshot.Frame {
	var out []snapshot.Frame
	for _, f := range s.Stack(id) {
		out = append(out, s.Frames[f])
	}
	return out
}

// diffSegments compares two states block for block: address, size,
// state, and the requested size of active blocks. limit is true when the
// first difference is a block older than the window sized by the
// rounding rule where the allocator had kept a larger unsplit block.
func diffSegments(want, got []snapshot.Segment) (d string, limit bool) {
	if len(want) != len(got) {
		return fmt.Sprintf("%d segments, want %d", len(got), len(want)), false
	}
	for i := range want {
		a, b := &want[i], &got[i]
		if a.Address != b.Address || a.TotalSize != b.TotalSize || a.Stream != b.Stream {
			return fmt.Sprintf("segment %v: %d bytes, want %v: %d bytes", b.Address, b.TotalSize, a.Address, a.TotalSize), false
		}
		for j := 0; j < len(a.Blocks) && j < len(b.Blocks); j++ {
			x, y := &a.Blocks[j], &b.Blocks[j]
			if x.Address != y.Address || x.Size != y.Size || x.State != y.State || (x.State.Active() && x.RequestedSize != y.RequestedSize) {
				unsplit := x.Address == y.Address && x.State == y.State && x.RequestedSize == y.RequestedSize && x.Size > y.Size && x.Size-y.Size <= 1<<20
				return fmt.Sprintf("block %v: %d bytes %v (requested %d), want %v: %d bytes %v (requested %d)", y.Address, y.Size, y.State, y.RequestedSize, x.Address, x.Size, x.State, x.RequestedSize), unsplit
			}
		}
		if len(a.Blocks) != len(b.Blocks) {
			return fmt.Sprintf("segment %v: %d blocks, want %d", b.Address, len(b.Blocks), len(a.Blocks)), false
		}
	}
	return "", false
}

// diffCurrent names the first current figure (*.current) where a and b
// differ.
func diffCurrent(a, b *stats.MemoryStats) string {
	fb := b.Figures()
	for i, f := range a.Figures() {
		if strings.HasSuffix(f.Key, ".current") && f.Value != fb[i].Value {
			return fmt.Sprintf("%s: %d, want %d", f.Key, fb[i].Value, f.Value)
		}
	}
	return ""
}

// TestCutCorpus cuts windows of every device with a trace of the corpus
// and checks each slice (see check).
func TestCutCorpus(t *testing.T) {
	files := append(corpus.Glob(t, "torch2.11/*/snapshot.pickle", 15), corpus.Glob(t, "public/*.pickle", 30)...)
	slices, refused := 0, 0
	var limits []string
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		s, _ = replay.Complete(s)
		name := filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		for dev, tr := range s.Traces {
			if len(tr) == 0 {
				continue
			}
			r, err := replay.Run(s, dev, replay.Options{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, w := range windows(dev, len(tr), r.PeakIndex) {
				err := check(s, r, w, &limits)
				switch {
				case err != nil && r.Stats.Known.History == stats.Unknown:
					refused++ // Cut refuses: tested in TestCutRefuses
				case err != nil:
					t.Errorf("%s device %d entries %d-%d: %v", name, dev, w.From, w.To, err)
				default:
					slices++
				}
			}
		}
	}
	t.Logf("%d slices checked, %d refused, %d with a start the slice cannot tell", slices, refused, len(limits))
	for _, l := range limits {
		t.Log("  ", l)
	}
}

// TestCutBig checks windows of a million entries of the 2M-entry file of
// the corpus (big/, xz compressed: scripts/bench.sh decompresses it and
// sets SNAPVIEW_BENCH_FILE, see internal/benchfile).
func TestCutBig(t *testing.T) {
	s := benchfile.Load(t)
	s, _ = replay.Complete(s)
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.Traces[0])
	var limits []string
	for _, w := range []slice.Window{{0, 500000, 1499999}, {0, 0, 999999}, {0, n - 1000000, n - 1}, slice.Around(0, r.PeakIndex, 1000000, n), {0, 1234567, 1244566}} {
		if err := check(s, r, w, &limits); err != nil {
			t.Errorf("entries %d-%d: %v", w.From, w.To, err)
		}
	}
	for _, l := range limits {
		t.Log("start the slice cannot tell:", l)
	}
}

// BenchmarkSlice1M cuts the middle million entries of the file
// SNAPVIEW_BENCH_FILE names (the 2M-entry one of the corpus) and writes
// them as a pickle: what `snapview slice` adds to a decode and a replay.
func BenchmarkSlice1M(b *testing.B) {
	s := benchfile.Load(b)
	s, _ = replay.Complete(s)
	r, err := replay.Run(s, 0, replay.Options{Mode: replay.StatsOnly})
	if err != nil {
		b.Fatal(err)
	}
	n := len(s.Traces[0])
	w := slice.Window{Device: 0, From: n/2 - 500000, To: n/2 + 499999}
	for b.Loop() {
		sl, err := slice.Cut(s, r, w)
		if err != nil {
			b.Fatal(err)
		}
		if err := dump.Pickle(io.Discard, sl); err != nil {
			b.Fatal(err)
		}
	}
}
