package snapshot

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/snapview/snapview/snapshot/pickle"
)

// This file is the converter's side of the pickle machine (the
// pickle.Converter it calls): the trace entries of each device's list,
// kept as the machine appends them, and the conversion of what its batch
// reader reads (entrySchema).

// newMachine returns the pickle machine that reads src for c, size being
// the input's size (0 when not known); c.m is set to it.
func (c *converter) newMachine(src io.Reader, size int64) *pickle.Machine {
	cfg := pickle.Config{Size: size, MaxString: c.lim.MaxString, MaxStack: c.lim.MaxStack, Budget: c.budget,
		Pool: c.pool, RecordKey: entryKeyNames[keyAction], Converter: c, Schema: entrySchema, Foreign: errNotSnapshot}
	if c.lim.genericOnly {
		cfg.Schema = nil
	}
	c.m = pickle.New(src, cfg)
	return c.m
}

// entryList holds the trace entries converted from one record list of the
// machine (a device's trace), in chunks, as they are appended.
type entryList struct {
	// evChunks hold the trace entries converted while appending.
	evChunks [][]TraceEntry
	evLen    int
	evStart  int64 // input offset at the first entry
	evError  error // first item of the list that was not an entry
	// taken holds the entries once takeEvents gave them out: a list the
	// file references for two devices gives both the same entries,
	// shared, not copied.
	taken   []TraceEntry
	isTaken bool
}

// entries returns the entryList of record list l (List.Tag is 1 + its
// index in c.lists).
func (c *converter) entries(l *pickle.List) *entryList {
	if l.Tag == 0 {
		c.lists = append(c.lists, &entryList{})
		l.Tag = int32(len(c.lists))
	}
	return c.lists[l.Tag-1]
}

// entryCount is the number of entries of l (0 for a list that holds
// none).
func (c *converter) entryCount(l *pickle.List) int {
	if l.Tag == 0 {
		return 0
	}
	return c.lists[l.Tag-1].evLen
}

// offset returns the bytes the machine has read and the input's size (0
// when not known; both 0 for JSON).
func (c *converter) offset() (off, size int64) {
	if c.m == nil {
		return 0, 0
	}
	return c.m.Offset(), c.m.Size()
}

// evFirst is the capacity of a trace's first chunk of entries; it grows
// to evChunk, the size of the next ones.
const (
	evFirst = 2
	evChunk = 1 << 14
)

// addEvent appends a converted trace entry to l. Entries go in chunks of
// evChunk; once the first chunk is full and the input's size is known, one
// chunk is sized for the whole list from the bytes per entry so far, so
// that the final slice needs no copy (capacity never written to costs no
// resident memory).
func (c *converter) addEvent(l *entryList, e TraceEntry) {
	off, size := c.offset()
	n := len(l.evChunks)
	if n == 0 {
		l.evStart = off
		l.evChunks = append(l.evChunks, make([]TraceEntry, 0, evFirst))
		n++
	} else if ch := l.evChunks[0]; n == 1 && len(ch) == cap(ch) && len(ch) < evChunk {
		// The first chunk grows from evFirst to evChunk, so that a
		// device with a few entries costs a few entries.
		grown := make([]TraceEntry, len(ch), min(4*len(ch), evChunk))
		copy(grown, ch)
		l.evChunks[0] = grown
	} else if ch := l.evChunks[n-1]; len(ch) == cap(ch) {
		want := evChunk
		if n == 1 && size > off {
			perEntry := float64(off-l.evStart) / float64(len(ch))
			if perEntry < 16 {
				perEntry = 16
			}
			rest := float64(size-off)/perEntry*1.05 + 1024
			if rest < 1<<31 {
				want = len(ch) + int(rest)
			}
		}
		if n == 1 && want > evChunk {
			big := make([]TraceEntry, len(ch), want)
			copy(big, ch)
			l.evChunks[0] = big
		} else {
			l.evChunks = append(l.evChunks, make([]TraceEntry, 0, want))
			n++
		}
	}
	l.evChunks[n-1] = append(l.evChunks[n-1], e)
	l.evLen++
	c.budget.Spend(entryBytes)
}

// entryBytes is the size of a TraceEntry, charged to the budget for
// each entry appended.
const entryBytes = 48

func (l *entryList) event(i int64) TraceEntry {
	for _, c := range l.evChunks {
		if i < int64(len(c)) {
			return c[i]
		}
		i -= int64(len(c))
	}
	return TraceEntry{}
}

// takeEvents returns the converted entries as one slice, joining chunks
// only when there are several.
func (l *entryList) takeEvents() []TraceEntry {
	if l.isTaken {
		return l.taken
	}
	l.isTaken = true
	if len(l.evChunks) == 1 {
		out := l.evChunks[0]
		l.evChunks = nil
		l.taken = out
		return out
	}
	out := make([]TraceEntry, 0, l.evLen)
	for i, c := range l.evChunks {
		out = append(out, c...)
		l.evChunks[i] = nil
	}
	l.evChunks = nil
	l.taken = out
	return out
}

// AppendDict converts trace entry dict d, appended to list l
// (pickle.Converter).
func (c *converter) AppendDict(l *pickle.List, d *pickle.Dict) {
	t := c.entries(l)
	c.entryIndex = t.evLen
	c.addEvent(t, c.entry(d))
}

// AppendRecord appends entry i of list from to l again.
func (c *converter) AppendRecord(l, from *pickle.List, i int64) {
	c.addEvent(c.entries(l), c.entries(from).event(i))
}

// Reject keeps the first item of l that is not a trace entry dict, for
// traceList's error.
func (c *converter) Reject(l *pickle.List, v pickle.Value, n int) {
	if t := c.entries(l); t.evError == nil {
		t.evError = fmt.Errorf("item %d is a %s, not a trace entry dict", n, v.TypeName())
	}
}

// Reopen gives a frame list converted to a stack its frames back, as
// references: more frames were appended after it was converted (a stack of
// over 1000 frames comes in several APPENDS).
func (c *converter) Reopen(l *pickle.List) {
	for _, f := range c.s.Stacks[l.Ref-1] {
		l.Items = append(l.Items, pickle.Value{N: int64(f), X: pickle.DictRef{}})
	}
}

// Forget drops a recycled frame dict from framesByPtr.
func (c *converter) Forget(d *pickle.Dict) { delete(c.framesByPtr, d) }

// Frame keys: the slots of a frame dict in entrySchema.Sub.
const (
	fkFilename = 1 + iota
	fkLine
	fkName
)

// entrySchema is what the machine's batch reader reads: the trace-entry
// keys (their slots are the key constants) and the frame keys.
var entrySchema = &pickle.Schema{
	Keys: []pickle.Key{
		keyAction:         {Name: "action", Kind: pickle.KindStr},
		keyAddr:           {Name: "addr", Kind: pickle.KindInt},
		keyDeviceFree:     {Name: "device_free", Kind: pickle.KindInt},
		keySize:           {Name: "size", Kind: pickle.KindInt},
		keyStream:         {Name: "stream", Kind: pickle.KindInt},
		keyTimeUS:         {Name: "time_us", Kind: pickle.KindInt},
		keyFrames:         {Name: "frames", Kind: pickle.KindList},
		keyCompileContext: {Name: "compile_context", Kind: pickle.KindStr},
		keyUserMetadata:   {Name: "user_metadata", Kind: pickle.KindStr},
	},
	Sub: []pickle.Key{
		fkFilename: {Name: "filename", Kind: pickle.KindStr},
		fkLine:     {Name: "line", Kind: pickle.KindInt},
		fkName:     {Name: "name", Kind: pickle.KindStr},
		// PyTorch's fx annotations, read and dropped, as frame does.
		4: {Name: "fx_node_op"},
		5: {Name: "fx_node_name"},
		6: {Name: "fx_node_target"},
		7: {Name: "fx_original_trace"},
	},
}

// Str converts an entry's action (known actions only: an unknown one is
// left to the generic path, which counts it) or optional string.
func (c *converter) Str(slot int, s int64) (int64, bool) {
	if slot == int(keyAction) {
		a, ok := c.fastAction(s)
		return int64(a), ok
	}
	return int64(c.poolStrID(pickle.Value{N: s, X: pickle.Str{}}, "")), true
}

// Dict interns the frame the batch reader read.
func (c *converter) Dict(r pickle.Record) int64 {
	str := func(slot int) string {
		if r.Has&(1<<slot) == 0 || r.V[slot] < 0 {
			return ""
		}
		return c.pool.Strs[r.V[slot]]
	}
	fr := Frame{Filename: str(fkFilename), Name: str(fkName)}
	if r.Has&(1<<fkLine) != 0 {
		fr.Line = r.V[fkLine]
	}
	return int64(c.internFrame(fr))
}

// List interns the stack of the frames the batch reader read (key as in
// converter.stack).
func (c *converter) List(refs []int64) int64 {
	if len(refs) == 0 {
		return int64(NoStack)
	}
	c.keyBuf = c.keyBuf[:0]
	for _, id := range refs {
		c.keyBuf = binary.AppendUvarint(c.keyBuf, uint64(id))
	}
	id, ok := c.stacks[string(c.keyBuf)]
	if !ok {
		id = StackID(len(c.s.Stacks))
		st := make([]FrameID, len(refs))
		for i, f := range refs {
			st[i] = FrameID(f)
		}
		c.s.Stacks = append(c.s.Stacks, st)
		c.stacks[string(c.keyBuf)] = id
	}
	return int64(id)
}

// Old converts a frame dict or frame list memoised before a batch, as the
// generic path does when it meets it in an entry.
func (c *converter) Old(d *pickle.Dict, l *pickle.List) {
	if d != nil {
		c.frame(pickle.Value{X: d}, "device_traces[][].frames[]")
	} else {
		c.stack(pickle.Value{X: l}, "device_traces[][].frames")
	}
}

// Record converts record i of the batch being read into c.batch.
func (c *converter) Record(i int, r *pickle.Record) {
	if i < cap(c.batch) {
		c.batch = c.batch[:i+1]
	} else {
		c.batch = append(c.batch[:i], TraceEntry{})
	}
	setEntry(&c.batch[i], r)
}

// Batch appends the n entries of the batch just read to l's entries.
func (c *converter) Batch(l *pickle.List, n int, counts *[pickle.MaxSlots]int) {
	c.addEvents(c.entries(l), c.batch[:n])
	for k := keyAction; int(k) < len(entryKeyNames); k++ {
		c.entryFields[k] += counts[k]
	}
}

// addEvents is addEvent for a run of entries: what fits in the last chunk
// is copied at once.
func (c *converter) addEvents(l *entryList, es []TraceEntry) {
	for len(es) > 0 {
		if n := len(l.evChunks); n > 0 {
			ch := l.evChunks[n-1]
			if k := min(cap(ch)-len(ch), len(es)); k > 0 {
				l.evChunks[n-1] = append(ch, es[:k]...)
				l.evLen += k
				c.budget.Spend(int64(k) * entryBytes)
				es = es[k:]
				continue
			}
		}
		c.addEvent(l, es[0])
		es = es[1:]
	}
}

// setEntry sets every field of e from a record the batch reader read (as
// entry converts a dict); an absent slot holds 0, so only the flags and
// an oom entry's device_free need the record's Has. (Set in place: a
// TraceEntry built and then copied costs twice as much here.)
func setEntry(e *TraceEntry, r *pickle.Record) {
	h := r.Has
	e.Action = Action(r.V[keyAction])
	e.Addr = Addr(r.V[keyAddr])
	e.Size = r.V[keySize]
	e.Stream = uint64(r.V[keyStream])
	e.TimeUS = r.V[keyTimeUS]
	e.Stack = StackID(r.V[keyFrames])
	e.CompileContext = StrID(r.V[keyCompileContext])
	e.UserMetadata = StrID(r.V[keyUserMetadata])
	e.Flags = uint8(h>>keyAddr&1)*FlagAddr | uint8(h>>keyTimeUS&1)*FlagTime | uint8(h>>keyFrames&1)*FlagFrames
	if e.Action == ActionOOM && h&(1<<keyDeviceFree) != 0 {
		e.Addr = Addr(r.V[keyDeviceFree])
	}
}

// fastAction is poolAction for the batch reader: known actions only (an
// unknown one is counted by the generic path).
func (c *converter) fastAction(s int64) (Action, bool) {
	if s < int64(len(c.actByStr)) && c.actByStr[s] != ActionNone {
		return c.actByStr[s], true
	}
	a, ok := ParseAction(c.pool.Strs[s])
	if !ok {
		return ActionNone, false
	}
	if s < 1<<20 {
		for int64(len(c.actByStr)) <= s {
			c.actByStr = append(c.actByStr, ActionNone)
		}
		c.actByStr[s] = a
	}
	return a, true
}

// internFrame returns the FrameID of fr, adding it if new.
func (c *converter) internFrame(fr Frame) FrameID {
	id, ok := c.frames[fr]
	if !ok {
		id = FrameID(len(c.s.Frames))
		c.s.Frames = append(c.s.Frames, fr)
		c.frames[fr] = id
	}
	return id
}
