// Package slice cuts a window of trace entries out of a snapshot as a
// snapshot of its own, one that PyTorch's tools and snapview open as
// they open the file torch.cuda.memory._dump_snapshot() writes.
//
// A slice of entries [From, To] of one device holds:
//
//   - segments: the allocator state after entry To as the replay of the
//     original finds it (replay.Result.StateAt), segment for segment and
//     block for block, with each block's requested size and frames;
//     after the last entry, the file's own segments of the device;
//   - device_traces: the entries From to To of that device (the other
//     devices' lists empty, so that the device keeps its ordinal);
//   - allocator_settings as the file has them;
//   - external_annotations: the device's annotations whose time_us lies
//     between entry From's and entry To's.
//
// A viewer that replays the trace backwards from the segments (as
// torch/utils/viz/MemoryViz.js and replay.Run do) meets each free of
// a block allocated before the window after the block is in the
// segments' state or is freed inside the window, so it reaches the state
// before entry From: the blocks alive at the window's start that the
// window frees are undone from their free entries, and the others are in
// the segments.
package slice

import (
	"fmt"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// Window is a range of trace entries of one device, both ends included.
type Window struct {
	Device   int
	From, To int
}

// Entries is the number of trace entries in w.
func (w Window) Entries() int { return w.To - w.From + 1 }

// Around returns the window of n entries (at least 1) of a trace of total
// entries centred on entry i: i - n/2 to i + (n - 1 - n/2), shifted to fit
// the trace and cut to it when the trace is shorter.
func Around(device, i, n, total int) Window {
	n = max(1, min(n, total))
	from := i - n/2
	from = max(0, min(from, total-n))
	return Window{Device: device, From: from, To: from + n - 1}
}

// Cut returns the slice of s for w, from r, the replay of w.Device
// (replay.Run of s, any mode). The slice shares
// s's frames, stacks and strings and the trace entries themselves: s
// must not change while it is in use.
//
// Cut refuses (an error saying why) a window outside the device's trace
// and a device whose history the replay cannot trust
// (Result.Stats.Known.History Unknown: the replay does not end in the
// file's segments, or the rounding is unknown), as the state at the
// window's end would be a guess.
func Cut(s *snapshot.Snapshot, r *replay.Result, w Window) (*snapshot.Snapshot, error) {
	var trace []snapshot.TraceEntry
	if w.Device >= 0 && w.Device < len(s.Traces) {
		trace = s.Traces[w.Device]
	}
	switch {
	case r.Device != w.Device:
		return nil, fmt.Errorf("slice of device %d: the replay is of device %d", w.Device, r.Device)
	case len(trace) == 0:
		return nil, fmt.Errorf("device %d has no trace entries: there is no history to cut (record with torch.cuda.memory._record_memory_history)", w.Device)
	case w.From < 0 || w.To >= len(trace) || w.From > w.To:
		return nil, fmt.Errorf("slice of device %d: entries %d to %d are not a window of its %d trace entries", w.Device, w.From, w.To, len(trace))
	case r.Stats.Known.History == stats.Unknown:
		return nil, fmt.Errorf("device %d: the replay cannot tell the allocator state at entry %d, so no slice is cut: %s", w.Device, w.To, r.Stats.Known.Why)
	}
	out := &snapshot.Snapshot{
		Format:          snapshot.Format{Encoding: "pickle", PickleProtocol: 4},
		HasDeviceTraces: true,
		Traces:          make([][]snapshot.TraceEntry, len(s.Traces)),
		Settings:        s.Settings,
		HasAnnotations:  s.HasAnnotations,
		Frames:          s.Frames,
		Stacks:          s.Stacks,
		Strings:         s.Strings,
		UnknownActions:  s.UnknownActions,
		TopLevelKeys:    []string{"segments", "device_traces", "allocator_settings", "external_annotations"},
	}
	out.Traces[w.Device] = trace[w.From : w.To+1 : w.To+1]
	for _, f := range s.Fields {
		// The optional keys of trace entries the file had, which the
		// slice's entries keep (see snapshot/dump).
		switch f.Name {
		case "device_traces[][].compile_context", "device_traces[][].user_metadata", "device_traces[][].time_us":
			out.Fields = append(out.Fields, f)
		}
	}
	segs, err := endSegments(s, r, w)
	if err != nil {
		return nil, err
	}
	out.Segments = segs
	if s.HasAnnotations && trace[w.From].Flags&snapshot.FlagTime != 0 {
		t0, t1 := trace[w.From].TimeUS, trace[w.To].TimeUS
		for _, a := range s.Annotations {
			if a.Device == w.Device && a.TimeUS >= t0 && a.TimeUS <= t1 {
				out.Annotations = append(out.Annotations, a)
			}
		}
	}
	return out, nil
}

// Notes says what a reader of the slice for w cannot tell from it (one
// sentence each, without a full stop): a window that holds free_completed
// entries but no free_requested, cut from a trace that has them; and a
// trace that misses the start of the run (r.Seeded), whose slice's state
// comes from the replay seeded from the file's segments.
func Notes(s *snapshot.Snapshot, r *replay.Result, w Window) []string {
	var notes []string
	completed, requested := false, false
	for _, e := range s.Traces[w.Device][w.From : w.To+1] {
		switch e.Action {
		case snapshot.ActionFreeCompleted:
			completed = true
		case snapshot.ActionFreeRequested:
			requested = true
		}
	}
	if completed && !requested && !r.SkipsFreeRequested {
		notes = append(notes, "the window holds free_completed entries but no free_requested: readers take it as recorded with skip_actions=[\"free_requested\"], so a block pending free at its start reads as allocated there (widen the window to take a free_requested in)")
	}
	if r.Seeded {
		notes = append(notes, fmt.Sprintf("device %d's trace misses the start of the run: the slice's state comes from the replay seeded from the file's segments (%s)", w.Device, r.Stats.Known.Why))
	}
	return notes
}

// endSegments returns the device's segments after entry w.To: the file's
// own after the last entry (they carry what PyTorch left in inactive
// blocks), else the replayed state's, with inactive blocks carrying no
// request and no frames, as PyTorch's blocks freed in a snapshot do.
func endSegments(s *snapshot.Snapshot, r *replay.Result, w Window) ([]snapshot.Segment, error) {
	if w.To == len(s.Traces[w.Device])-1 && r.Check.Equal {
		var out []snapshot.Segment
		lo, hi := s.DeviceSegments(w.Device)
		for i := lo; i < hi; i++ {
			if s.Segments[i].Device == w.Device {
				out = append(out, s.Segments[i])
			}
		}
		return out, nil
	}
	st, err := r.StateAt(w.To)
	if err != nil {
		return nil, err
	}
	return Segments(st), nil
}

// Segments returns st's segments as a snapshot holds them: the sizes
// summed over the blocks (allocated_size over active_allocated blocks,
// active_size and requested_size over active ones), segment_type from
// the pool.
func Segments(st *replay.State) []snapshot.Segment {
	out := make([]snapshot.Segment, 0, len(st.Segments))
	for i := range st.Segments {
		ss := &st.Segments[i]
		typ := "small"
		if ss.Large {
			typ = "large"
		}
		sg := snapshot.Segment{
			Device: st.Device, Address: ss.Addr, TotalSize: ss.Size, Stream: ss.Stream,
			Type: typ, Pool: ss.Pool, Expandable: ss.Expandable, Stack: ss.Stack,
			Blocks: make([]snapshot.Block, len(ss.Blocks)),
		}
		for j := range ss.Blocks {
			b := &ss.Blocks[j]
			blk := snapshot.Block{Address: b.Addr, Size: b.Size, State: b.State}
			if b.State.Active() {
				blk.RequestedSize, blk.Stack = b.Requested, b.Stack
				sg.ActiveSize += b.Size
				sg.RequestedSize += b.Requested
			}
			if b.State == snapshot.StateActiveAllocated {
				sg.AllocatedSize += b.Size
			}
			sg.Blocks[j] = blk
		}
		out = append(out, sg)
	}
	return out
}
