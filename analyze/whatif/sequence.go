package whatif

import (
	"fmt"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

// This file is the entry point for callers that build a request sequence
// of their own (forecast: the requests of a run at another batch size) and
// simulate it with the same allocator simulation [Analyze] runs.

// EventKind is what one [Event] of a request sequence does.
type EventKind uint8

const (
	// EventAlloc is a request (an alloc entry): Size is the caller's
	// unrounded size, bytes.
	EventAlloc EventKind = iota
	// EventFreeRequested is free(): the block stops being allocated.
	EventFreeRequested
	// EventFreeCompleted is free_block(): the block returns to its pool.
	EventFreeCompleted
	// EventEmptyCache is torch.cuda.empty_cache() (release_cached_blocks).
	EventEmptyCache
	// EventOOM is a request the run failed (an oom entry): Size is the
	// request rounded under the file's settings.
	EventOOM
)

// Event is one step of a request sequence.
type Event struct {
	// Size is the request's size in bytes (EventAlloc, EventOOM).
	Size int64
	// Stream is the request's cudaStream_t.
	Stream uint64
	// Entry is the trace entry the event stands for; [Outcome.FirstOOM]
	// names the Entry of the first failed request.
	Entry int32
	// ID names the request: an EventAlloc's ID is new, and its frees carry
	// the same ID. IDs are small integers (they index a table).
	ID   int32
	Kind EventKind
	// Pool is the request's pool: 0 the default pools, i > 0 the i-th
	// private pool (CUDA graphs, MemPools).
	Pool int16
}

// Events returns the request sequence the simulation reads from device's
// trace of s (the one [Analyze] simulates), r being the device's replay
// ([replay.Run], StatsOnly). Runs of segment_free entries read as
// empty_cache() calls are EventEmptyCache; segment entries are otherwise
// left out (the simulation makes its own). It returns an error when the
// device has no trace, or when the trace misses the start of the run (the
// state before its first entry is not empty), since such a sequence lacks
// the requests made before it.
func Events(s *snapshot.Snapshot, r *replay.Result) ([]Event, error) {
	d := r.Device
	if d < 0 || d >= len(s.Traces) || len(s.Traces[d]) == 0 {
		return nil, fmt.Errorf("device %d: no trace entries (record with torch.cuda.memory._record_memory_history())", d)
	}
	if len(r.InitialState()) > 0 {
		return nil, fmt.Errorf("device %d: the trace misses the start of the run (%d segments before its first entry): "+
			"record from the first allocation", d, len(r.InitialState()))
	}
	p := compile(s, r, r.Config(), 0)
	out := make([]Event, 0, len(p.ops))
	for _, o := range p.ops {
		e := Event{Size: o.size, Stream: o.stream, Entry: o.entry, ID: o.id, Pool: o.pool}
		switch o.kind {
		case opAlloc:
			e.Kind = EventAlloc
		case opOOM:
			e.Kind = EventOOM
		case opFreeRequested:
			e.Kind = EventFreeRequested
		case opFreeCompleted:
			e.Kind = EventFreeCompleted
		case opEmptyCache:
			e.Kind = EventEmptyCache
		}
		out = append(out, e)
	}
	return out, nil
}

// Simulate runs the allocator simulation [Analyze] runs over a request
// sequence of the caller's (no state before it) under cfg, capped at
// limit bytes (0: no cap), and returns the outcome. It returns an error
// when an event names a negative ID or a pool below 0.
func Simulate(events []Event, cfg allocator.Config, limit int64) (Outcome, error) {
	p := &program{device: -1}
	p.ops = make([]op, 0, len(events))
	pools := int16(0)
	for i := range events {
		e := &events[i]
		if e.ID < 0 || e.Pool < 0 {
			return Outcome{}, fmt.Errorf("event %d: negative id or pool", i)
		}
		o := op{size: e.Size, stream: e.Stream, entry: e.Entry, id: e.ID, pool: e.Pool}
		switch e.Kind {
		case EventAlloc:
			o.kind = opAlloc
		case EventOOM:
			o.kind = opOOM
			p.ooms++
		case EventFreeRequested:
			o.kind = opFreeRequested
		case EventFreeCompleted:
			o.kind = opFreeCompleted
		case EventEmptyCache:
			o.kind = opEmptyCache
		default:
			return Outcome{}, fmt.Errorf("event %d: unknown kind %d", i, e.Kind)
		}
		p.nids = max(p.nids, int(e.ID)+1)
		pools = max(pools, e.Pool)
		p.ops = append(p.ops, o)
	}
	p.npools = int(pools)
	return newSim(p, cfg, limit, nil).run(), nil
}
