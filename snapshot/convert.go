package snapshot

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/snapview/snapview/snapshot/pickle"
)

// converter turns pickle values into the model, interning strings, frames
// and stacks. Errors are sticky: the first one wins and later calls are
// cheap no-ops, so field extraction stays linear.
type converter struct {
	s    *Snapshot
	err  error
	pool *pickle.Pool
	// m, while a pickle is being read, takes converted frame dicts and
	// lists back: their memo slots are swapped for compact references.
	m *pickle.Machine
	// lists holds the trace entries of the machine's record lists;
	// batch, those of the batch the machine's batch reader is reading
	// (entries.go).
	lists []*entryList
	batch []TraceEntry
	// ids is scratch space for stack conversion.
	ids []FrameID
	// entryKeys, actByStr and strByPool map string-pool indexes to entry
	// keys, actions and StrIDs+1 (0: not cached).
	entryKeys []uint8
	actByStr  []Action
	strByPool []StrID

	strs        map[string]StrID
	framesByPtr map[*pickle.Dict]FrameID
	frames      map[Frame]FrameID
	stacks      map[string]StackID
	actions     map[string]Action
	unknown     map[string]int
	fields      map[string]int
	entryFields [keyUserMetadata + 1]int
	warnings    map[string]int
	wide        map[string]*wideWarning
	keyBuf      []byte
	// entryIndex is the index, in its device's list, of the trace entry
	// being converted; skipped records the optional entry fields of an
	// unexpected type (see optStrID).
	entryIndex int
	skipped    map[string]*skippedField
	// lim and budget bound what the conversion may build (see Limits).
	lim    Limits
	budget *pickle.Budget
	// segsByPtr holds the segments converted from each dict: a dict the
	// file references again (through the memo) is converted once.
	segsByPtr map[*pickle.Dict]Segment
	// unshared is set when no value can be referenced twice (JSON): then
	// nothing is remembered by pointer.
	unshared bool
}

// skippedField is an optional field whose value had an unexpected type:
// the first entry that had it, the type there, and how many entries did.
type skippedField struct {
	first int
	typ   string
	n     int
}

func newConverter() *converter {
	s := &Snapshot{
		Frames:  []Frame{},
		Stacks:  [][]FrameID{{}},
		Strings: []string{""},
	}
	c := &converter{
		s:           s,
		pool:        pickle.NewPool(),
		strs:        map[string]StrID{"": 0},
		framesByPtr: map[*pickle.Dict]FrameID{},
		frames:      map[Frame]FrameID{},
		stacks:      map[string]StackID{"": 0},
		actions:     map[string]Action{},
		unknown:     map[string]int{},
		fields:      map[string]int{},
		warnings:    map[string]int{},
		wide:        map[string]*wideWarning{},
		skipped:     map[string]*skippedField{},
		lim:         DefaultLimits(),
		segsByPtr:   map[*pickle.Dict]Segment{},
	}
	c.budget = newBudget(c.lim, func() int64 { return 0 })
	c.internEntryKeys()
	return c
}

// fieldError is a schema fault at a path such as segments[3].blocks[0].size.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string { return e.path + ": " + e.msg }

func (c *converter) failf(path, format string, args ...any) {
	if c.err == nil {
		c.err = &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
	}
}

// spend charges n bytes of decoded objects to the budget; once it is
// spent, the budget's error is the conversion's.
func (c *converter) spend(n int64) bool {
	if c.budget.Spend(n) {
		return true
	}
	if c.err == nil {
		c.err = c.budget.Err
	}
	return false
}

func (c *converter) warnf(format string, args ...any) {
	c.warnings[fmt.Sprintf(format, args...)]++
}

// wideWarning is the warning for the integers of one field (indexes
// left out) that do not fit int64: the first, and how many.
type wideWarning struct {
	first, msg string
	n          int
}

// warnWide records that the integer at path does not fit int64 (msg says
// what it holds); one warning per field, whatever the entries' count.
func (c *converter) warnWide(path, msg string) {
	field := fieldPattern(path)
	if w := c.wide[field]; w != nil {
		w.n++
		return
	}
	c.wide[field] = &wideWarning{first: path, msg: msg, n: 1}
}

// fieldPattern is path with its list indexes as [*]:
// device_traces[0][12].size -> device_traces[*][*].size.
func fieldPattern(path string) string {
	b := make([]byte, 0, len(path))
	for i := 0; i < len(path); i++ {
		b = append(b, path[i])
		if path[i] != '[' {
			continue
		}
		j := i + 1
		for j < len(path) && path[j] >= '0' && path[j] <= '9' {
			j++
		}
		if j > i+1 && j < len(path) && path[j] == ']' {
			b = append(b, '*')
			i = j - 1
		}
	}
	return string(b)
}

func (c *converter) str(s string) StrID {
	if id, ok := c.strs[s]; ok {
		return id
	}
	id := StrID(len(c.s.Strings))
	c.s.Strings = append(c.s.Strings, s)
	c.strs[s] = id
	return id
}

// asLine returns a frame's line number. PyTorch's unwinder writes -1 cast
// to unsigned (2^64-1) for a frame whose line it does not know (C++ frames
// of some builds): that is -1, the line unknown, without a warning (it is
// no fault of the file). Other values are as asInt.
func (c *converter) asLine(v pickle.Value, path string) (int64, bool) {
	if x, ok := v.X.(*pickle.WideInt); ok && x.U64 && x.Lo == math.MaxUint64 {
		return -1, true
	}
	return c.asInt(v, path)
}

// asInt returns v as an int64. Integers wider than 64 bits wrap modulo 2^64
// with a warning (PyTorch writes 2^64-1 for a -1 cast to unsigned).
func (c *converter) asInt(v pickle.Value, path string) (int64, bool) {
	switch x := v.X.(type) {
	case nil:
		return v.N, true
	case *pickle.WideInt:
		w := int64(x.Lo)
		if x.U64 {
			c.warnWide(path, fmt.Sprintf("%s, which looks like %d cast to unsigned", x, w))
		} else {
			c.warnWide(path, fmt.Sprintf("%s, wider than 64 bits; kept modulo 2^64", x))
		}
		return w, true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return int64(x), true
		}
	case pickle.Bool:
		// Python bools are ints.
		if x {
			return 1, true
		}
		return 0, true
	}
	c.failf(path, "want int, got %s", v.TypeName())
	return 0, false
}

// asUint returns v as a uint64, for addresses and stream handles.
func (c *converter) asUint(v pickle.Value, path string) uint64 {
	if x, ok := v.X.(*pickle.WideInt); ok && x.U64 {
		return x.Lo
	}
	n, _ := c.asInt(v, path)
	return uint64(n)
}

func (c *converter) asString(v pickle.Value, path string) string {
	switch v.X.(type) {
	case pickle.Str:
		return c.pool.Strs[v.N]
	case pickle.None:
		return ""
	}
	c.failf(path, "want str, got %s", v.TypeName())
	return ""
}

func (c *converter) asBool(v pickle.Value, path string) bool {
	switch x := v.X.(type) {
	case pickle.Bool:
		return bool(x)
	case nil:
		return v.N != 0
	}
	c.failf(path, "want bool, got %s", v.TypeName())
	return false
}

func (c *converter) asFloat(v pickle.Value, path string) float64 {
	switch x := v.X.(type) {
	case float64:
		return x
	case nil:
		return float64(v.N)
	}
	c.failf(path, "want float, got %s", v.TypeName())
	return 0
}

func (c *converter) asDict(v pickle.Value, path string) *pickle.Dict {
	if d, ok := v.X.(*pickle.Dict); ok {
		return d
	}
	c.failf(path, "want dict, got %s", v.TypeName())
	return nil
}

// asList returns the items of a list (or tuple); None counts as empty.
func (c *converter) asList(v pickle.Value, path string) []pickle.Value {
	switch x := v.X.(type) {
	case *pickle.List:
		if x.Records() {
			c.failf(path, "want a list of %s, got a list of trace entries", "values")
			return nil
		}
		if x.Ref > 0 {
			c.failf(path, "want a list of %s, got a list of frames", "values")
			return nil
		}
		return x.Items
	case *pickle.Tuple:
		return x.Items
	case pickle.None:
		return nil
	}
	c.failf(path, "want list, got %s", v.TypeName())
	return nil
}

func (c *converter) unknownKey(path string) { c.unknown[path]++ }

// maxKeyText is the longest dict key the converter keeps whole in its
// counts of fields and unknown keys (shortKey).
const maxKeyText = 256

// shortKey is k for the counts of fields and unknown keys: cut to its
// first 64 bytes and its length when longer than maxKeyText, so that a
// key of 16 MiB repeated on 10^5 entries costs no more than a short one
// (it was copied and hashed whole on each).
func shortKey(k string) string {
	if len(k) <= maxKeyText {
		return k
	}
	return strings.ToValidUTF8(k[:64], "") + "…(" + strconv.Itoa(len(k)) + " bytes)"
}

// frame converts one frame dict.
func (c *converter) frame(v pickle.Value, path string) FrameID {
	if _, ok := v.X.(pickle.DictRef); ok {
		return FrameID(v.N)
	}
	d, ok := v.X.(*pickle.Dict)
	if !ok {
		c.failf(path, "want frame dict, got %s", v.TypeName())
		return 0
	}
	if id, ok := c.framesByPtr[d]; ok {
		return id
	}
	var f Frame
	for i := 0; i+1 < len(d.KV); i += 2 {
		k, _ := c.pool.Text(d.KV[i])
		switch k {
		case "filename":
			f.Filename = c.asString(d.KV[i+1], path+".filename")
		case "line":
			f.Line, _ = c.asLine(d.KV[i+1], path+".line")
		case "name":
			f.Name = c.asString(d.KV[i+1], path+".name")
		case "fx_node_op", "fx_node_name", "fx_node_target", "fx_original_trace":
		default:
			c.unknownKey("frames[]." + shortKey(k))
		}
	}
	id, ok := c.frames[f]
	if !ok {
		id = FrameID(len(c.s.Frames))
		c.s.Frames = append(c.s.Frames, f)
		c.frames[f] = id
	}
	if c.m != nil && d.Memo() >= 0 {
		c.m.ReplaceMemo(d.Memo(), pickle.Value{N: int64(id), X: pickle.DictRef{}})
	}
	if !c.unshared {
		// References taken before the memo slot was swapped (a frame
		// list built earlier) still hold d: they find the frame here, so
		// that it is converted (and its unknown keys counted) once. A
		// recycled dict leaves the map (Forget).
		c.framesByPtr[d] = id
	}
	return id
}

// stack converts a frame list. PyTorch shares one list object among all
// entries with the same traceback, so the pointer is checked first.
func (c *converter) stack(v pickle.Value, path string) StackID {
	var items []pickle.Value
	switch x := v.X.(type) {
	case pickle.ListRef:
		return StackID(v.N)
	case *pickle.List:
		if x.Ref > 0 {
			if c.m != nil {
				c.m.RecycleList(x)
			}
			return StackID(x.Ref - 1)
		}
		items = x.Items
	case pickle.None:
		return NoStack
	default:
		items = c.asList(v, path)
	}
	if len(items) == 0 {
		if l, ok := v.X.(*pickle.List); ok && c.m != nil {
			c.m.ReplaceMemo(l.Memo(), pickle.Value{N: int64(NoStack), X: pickle.ListRef{}})
			c.m.RecycleList(l)
		}
		return NoStack
	}
	ids := c.ids[:0]
	c.keyBuf = c.keyBuf[:0]
	for _, it := range items {
		f := c.frame(it, path)
		ids = append(ids, f)
		c.keyBuf = binary.AppendUvarint(c.keyBuf, uint64(f))
	}
	c.ids = ids
	id, ok := c.stacks[string(c.keyBuf)]
	if !ok {
		id = StackID(len(c.s.Stacks))
		c.s.Stacks = append(c.s.Stacks, append([]FrameID(nil), ids...))
		c.stacks[string(c.keyBuf)] = id
	}
	if l, ok := v.X.(*pickle.List); ok && c.err == nil {
		l.Ref = int64(id) + 1
		if c.m != nil {
			c.m.ReplaceMemo(l.Memo(), pickle.Value{N: int64(id), X: pickle.ListRef{}})
			for _, it := range l.Items {
				if d, ok := it.X.(*pickle.Dict); ok {
					c.m.RecycleDict(d)
				}
			}
			c.m.RecycleList(l)
		}
		l.Items = l.Items[:0]
	}
	return id
}

// Trace-entry keys, by their index in the string pool (entryKeys).
const (
	keyOther uint8 = iota
	keyAction
	keyAddr
	keyDeviceFree
	keySize
	keyStream
	keyTimeUS
	keyFrames
	keyCompileContext
	keyUserMetadata
)

var entryKeyNames = [...]string{
	keyAction:         "action",
	keyAddr:           "addr",
	keyDeviceFree:     "device_free",
	keySize:           "size",
	keyStream:         "stream",
	keyTimeUS:         "time_us",
	keyFrames:         "frames",
	keyCompileContext: "compile_context",
	keyUserMetadata:   "user_metadata",
}

// internEntryKeys puts the trace-entry keys first in the pool, so that
// entry can switch on pool indexes instead of comparing strings.
func (c *converter) internEntryKeys() {
	c.entryKeys = make([]uint8, 0, 16)
	for k := keyAction; int(k) < len(entryKeyNames); k++ {
		i := c.pool.Add(entryKeyNames[k])
		for int64(len(c.entryKeys)) <= i {
			c.entryKeys = append(c.entryKeys, keyOther)
		}
		c.entryKeys[i] = k
	}
}

// poolAction returns the Action of a pooled action string, caching it by
// pool index.
func (c *converter) poolAction(v pickle.Value, path string) Action {
	if _, ok := v.X.(pickle.Str); ok && v.N < int64(len(c.actByStr)) && c.actByStr[v.N] != ActionNone {
		return c.actByStr[v.N]
	}
	name := c.asString(v, path)
	a, ok := ParseAction(name)
	if !ok {
		a = c.unknownAction(name)
	}
	if _, ok := v.X.(pickle.Str); ok && v.N < 1<<20 {
		for int64(len(c.actByStr)) <= v.N {
			c.actByStr = append(c.actByStr, ActionNone)
		}
		c.actByStr[v.N] = a
	}
	return a
}

// poolStrID returns the StrID of a pooled string, caching it by pool index.
func (c *converter) poolStrID(v pickle.Value, path string) StrID {
	if _, ok := v.X.(pickle.Str); ok && v.N < int64(len(c.strByPool)) && c.strByPool[v.N] != 0 {
		return c.strByPool[v.N] - 1
	}
	id := c.str(c.asString(v, path))
	if _, ok := v.X.(pickle.Str); ok && v.N < 1<<20 {
		for int64(len(c.strByPool)) <= v.N {
			c.strByPool = append(c.strByPool, 0)
		}
		c.strByPool[v.N] = id + 1
	}
	return id
}

// optStrID is poolStrID for an optional string field of a trace entry
// (compile_context, user_metadata): a value of another type (an exporter
// writing user_metadata as a dict) is skipped, not a failed file; finish
// notes it once, with the first entry that had it.
func (c *converter) optStrID(v pickle.Value, path string) StrID {
	switch v.X.(type) {
	case pickle.Str, pickle.None:
		return c.poolStrID(v, path)
	}
	sk := c.skipped[path]
	if sk == nil {
		sk = &skippedField{first: c.entryIndex, typ: v.TypeName()}
		c.skipped[path] = sk
	}
	sk.n++
	return 0
}

// entry converts one trace entry dict (device_traces[d][i]).
func (c *converter) entry(d *pickle.Dict) TraceEntry {
	const path = "device_traces[][]"
	var e TraceEntry
	var deviceFree uint64
	hasFree := false
	for i := 0; i+1 < len(d.KV); i += 2 {
		kv := d.KV[i]
		v := d.KV[i+1]
		kind := keyOther
		if _, ok := kv.X.(pickle.Str); ok && kv.N < int64(len(c.entryKeys)) {
			kind = c.entryKeys[kv.N]
		}
		c.entryFields[kind]++
		switch kind {
		case keyAction:
			e.Action = c.poolAction(v, path+".action")
		case keyAddr:
			if v.X == nil {
				e.Addr = Addr(v.N)
			} else {
				e.Addr = Addr(c.asUint(v, path+".addr"))
			}
			e.Flags |= FlagAddr
		case keyDeviceFree:
			deviceFree = c.asUint(v, path+".device_free")
			hasFree = true
		case keySize:
			if v.X == nil {
				e.Size = v.N
			} else {
				e.Size, _ = c.asInt(v, path+".size")
			}
		case keyStream:
			if v.X == nil {
				e.Stream = uint64(v.N)
			} else {
				e.Stream = c.asUint(v, path+".stream")
			}
		case keyTimeUS:
			if v.X == nil {
				e.TimeUS = v.N
			} else {
				e.TimeUS, _ = c.asInt(v, path+".time_us")
			}
			e.Flags |= FlagTime
		case keyFrames:
			e.Stack = c.stack(v, path+".frames")
			e.Flags |= FlagFrames
		case keyCompileContext:
			e.CompileContext = c.optStrID(v, path+".compile_context")
		case keyUserMetadata:
			e.UserMetadata = c.optStrID(v, path+".user_metadata")
		default:
			k, ok := c.pool.Text(kv)
			if !ok {
				c.failf(path, "want str key, got %s", kv.TypeName())
			}
			c.unknownKey(path + "." + shortKey(k))
		}
	}
	if e.Action == ActionOOM && hasFree {
		e.Addr = Addr(deviceFree)
	}
	return e
}

func (c *converter) unknownAction(name string) Action {
	c.unknown["action:"+name]++
	if a, ok := c.actions[name]; ok {
		return a
	}
	n := len(c.s.UnknownActions)
	if int(ActionFirstUnknown)+n > 255 {
		return 255
	}
	a := ActionFirstUnknown + Action(n)
	c.s.UnknownActions = append(c.s.UnknownActions, name)
	c.actions[name] = a
	return a
}

// root converts the top-level value.
func (c *converter) root(v pickle.Value) {
	switch x := v.X.(type) {
	case *pickle.List:
		c.s.Legacy = true
		c.segments(v, "segments")
		return
	case *pickle.Dict:
		var hasSegs bool
		for i := 0; i+1 < len(x.KV); i += 2 {
			k, ok := c.pool.Text(x.KV[i])
			if !ok {
				c.failf("top level", "want str key, got %s (%v)", x.KV[i].TypeName(), errNotSnapshot)
				return
			}
			c.s.TopLevelKeys = append(c.s.TopLevelKeys, k)
			val := x.KV[i+1]
			switch k {
			case "segments":
				hasSegs = true
				c.segments(val, "segments")
			case "device_traces":
				c.s.HasDeviceTraces = true
				c.traces(val)
			case "allocator_settings":
				c.settings(val)
			case "external_annotations":
				c.s.HasAnnotations = true
				c.annotations(val)
			case "host_segments", "host_traces":
				c.host(k, val)
			default:
				c.unknownKey(shortKey(k))
			}
		}
		hostKeys := slices.Contains(c.s.TopLevelKeys, "host_segments") || slices.Contains(c.s.TopLevelKeys, "host_traces")
		if !hasSegs && !c.s.HasDeviceTraces && !hostKeys && c.err == nil {
			if LooksLikeMemoryStats(c.s.TopLevelKeys) {
				c.err = MemoryStatsError(len(c.s.TopLevelKeys))
			} else {
				c.err = fmt.Errorf("a pickled dict with neither segments nor device_traces: %w", errNotSnapshot)
			}
		}
		return
	}
	c.err = fmt.Errorf("the file holds a %s, not a dict or a list of segments: %w", v.TypeName(), errNotSnapshot)
}

// host converts host_segments or host_traces (the pinned host memory
// allocator, pytorch/pytorch#182407) with the converters of segments and
// device_traces, keeping the device's own. PyTorch's writer
// (THCPModule_memorySnapshot, torch/csrc/cuda/Module.cpp) puts both keys in
// every snapshot, as empty lists when host recording is off, so only a
// non-empty one makes HasHostTraces.
func (c *converter) host(key string, v pickle.Value) {
	segs, traces, has := c.s.Segments, c.s.Traces, c.s.HasDeviceTraces
	defer func() { c.s.HasHostTraces = len(c.s.HostSegments) > 0 || len(c.s.HostTraces) > 0 }()
	switch key {
	case "host_segments":
		c.segments(v, "host_segments")
		c.s.HostSegments = c.s.Segments
	case "host_traces":
		// PyTorch 2.14 writes one list of entries (one host allocator);
		// a list of lists is read as one list, in order.
		if l, ok := v.X.(*pickle.List); ok && !l.Records() && len(l.Items) > 0 {
			if _, flat := l.Items[0].X.(*pickle.Dict); flat {
				c.s.HostTraces = c.traceList(l, "host_traces")
				break
			}
		}
		c.traces(v)
		c.s.HostTraces = nil
		for _, t := range c.s.Traces {
			c.s.HostTraces = append(c.s.HostTraces, t...)
		}
	}
	c.s.Segments, c.s.Traces, c.s.HasDeviceTraces = segs, traces, has
}

func (c *converter) segments(v pickle.Value, path string) {
	items := c.asList(v, path)
	c.s.Segments = make([]Segment, 0, len(items))
	for i, it := range items {
		if c.err != nil {
			return
		}
		c.s.Segments = append(c.s.Segments, c.segment(it, fmt.Sprintf("%s[%d]", path, i)))
	}
}

// Bytes charged to the budget for a segment and a block.
const (
	segmentBytes = 128
	blockBytes   = 40
)

func (c *converter) segment(v pickle.Value, path string) Segment {
	var s Segment
	if !c.spend(segmentBytes) {
		return s
	}
	d := c.asDict(v, path)
	if d == nil {
		return s
	}
	if seg, ok := c.segsByPtr[d]; ok {
		// The same dict again: the same segment, its blocks shared.
		return seg
	}
	if !c.unshared {
		defer func() { c.segsByPtr[d] = s }()
	}
	var blocks []pickle.Value
	have := map[string]bool{}
	for i := 0; i+1 < len(d.KV); i += 2 {
		k, _ := c.pool.Text(d.KV[i])
		v := d.KV[i+1]
		p := path + "." + k
		have[k] = true
		host := strings.HasPrefix(path, "host_")
		if host {
			c.fields["host_segments[]."+shortKey(k)]++
		} else {
			c.fields["segments[]."+shortKey(k)]++
		}
		switch k {
		case "device":
			n, _ := c.asInt(v, p)
			if (n < 0 && !(host && n == -1)) || n > 1<<16 {
				c.failf(p, "device ordinal %d out of range", n)
			}
			s.Device = int(n)
		case "address":
			s.Address = Addr(c.asUint(v, p))
		case "total_size":
			s.TotalSize, _ = c.asInt(v, p)
		case "allocated_size":
			s.AllocatedSize, _ = c.asInt(v, p)
		case "active_size":
			s.ActiveSize, _ = c.asInt(v, p)
		case "requested_size":
			s.RequestedSize, _ = c.asInt(v, p)
		case "stream":
			s.Stream = c.asUint(v, p)
		case "segment_type":
			s.Type = c.asString(v, p)
		case "segment_pool_id":
			ids := c.asList(v, p)
			if len(ids) != 2 {
				if c.err == nil {
					c.failf(p, "want a pair of ints, got %d items", len(ids))
				}
				break
			}
			s.Pool[0], _ = c.asInt(ids[0], p+"[0]")
			s.Pool[1], _ = c.asInt(ids[1], p+"[1]")
		case "is_expandable":
			s.Expandable = c.asBool(v, p)
		case "frames":
			s.Stack = c.stack(v, p)
		case "blocks":
			blocks = c.asList(v, p)
		default:
			c.fields["segments[]."+shortKey(k)]--
			c.unknownKey("segments[]." + shortKey(k))
		}
	}
	s.Blocks = make([]Block, 0, len(blocks))
	addr := s.Address
	var alloc, active, req int64
	for i, bv := range blocks {
		if c.err != nil || !c.spend(blockBytes) {
			break
		}
		b, hasReq := c.block(bv, fmt.Sprintf("%s.blocks[%d]", path, i), addr)
		addr = b.Address + Addr(b.Size)
		if !hasReq && b.State.Active() && !strings.HasPrefix(path, "host_") {
			c.noRequested(s.Device)
		}
		switch b.State {
		case StateActiveAllocated:
			alloc += b.Size
			active += b.Size
			req += b.RequestedSize
		case StateActivePendingFree:
			active += b.Size
			req += b.RequestedSize
		}
		s.Blocks = append(s.Blocks, b)
	}
	if !have["allocated_size"] {
		s.AllocatedSize = alloc
	}
	if !have["active_size"] {
		s.ActiveSize = active
	}
	if !have["requested_size"] {
		s.RequestedSize = req
	}
	if !have["total_size"] {
		var t int64
		for _, b := range s.Blocks {
			t += b.Size
		}
		s.TotalSize = t
	}
	return s
}

// block converts one block; next is where it starts if the file does not
// say (PyTorch 2.0 blocks have no address). hasReq is false when the block
// has neither requested_size nor a history[0].real_size: its RequestedSize
// is then its Size.
func (c *converter) block(v pickle.Value, path string, next Addr) (b Block, hasReq bool) {
	b = Block{Address: next}
	d := c.asDict(v, path)
	if d == nil {
		return b, true
	}
	var history []pickle.Value
	hasFrames := false
	for i := 0; i+1 < len(d.KV); i += 2 {
		k, _ := c.pool.Text(d.KV[i])
		v := d.KV[i+1]
		p := path + "." + k
		c.fields["segments[].blocks[]."+shortKey(k)]++
		switch k {
		case "address":
			b.Address = Addr(c.asUint(v, p))
		case "size":
			b.Size, _ = c.asInt(v, p)
		case "requested_size":
			b.RequestedSize, _ = c.asInt(v, p)
			hasReq = true
		case "state":
			st := c.asString(v, p)
			switch st {
			case "active_allocated":
				b.State = StateActiveAllocated
			case "active_pending_free", "active_awaiting_free":
				b.State = StateActivePendingFree
			case "inactive":
				b.State = StateInactive
			default:
				c.unknown["state:"+st]++
			}
		case "frames":
			b.Stack = c.stack(v, p)
			hasFrames = true
		case "history":
			history = c.asList(v, p)
		default:
			c.fields["segments[].blocks[]."+shortKey(k)]--
			c.unknownKey("segments[].blocks[]." + shortKey(k))
		}
	}
	if len(history) > 0 && (!hasReq || !hasFrames) {
		// PyTorch 2.0: history[0] is the newest allocation of the block.
		h := c.asDict(history[0], path+".history[0]")
		if h != nil {
			for i := 0; i+1 < len(h.KV); i += 2 {
				k, _ := c.pool.Text(h.KV[i])
				switch k {
				case "real_size":
					if !hasReq {
						b.RequestedSize, _ = c.asInt(h.KV[i+1], path+".history[0].real_size")
						hasReq = true
					}
				case "frames":
					if !hasFrames {
						b.Stack = c.stack(h.KV[i+1], path+".history[0].frames")
					}
				}
			}
		}
	}
	if !hasReq {
		b.RequestedSize = b.Size
	}
	return b, hasReq
}

// noRequested records that an active block of device had no requested
// size (see Snapshot.NoRequestedSize).
func (c *converter) noRequested(device int) {
	if !slices.Contains(c.s.NoRequestedSize, device) {
		c.s.NoRequestedSize = append(c.s.NoRequestedSize, device)
		slices.Sort(c.s.NoRequestedSize)
	}
}

func (c *converter) traces(v pickle.Value) {
	var lists []pickle.Value
	switch x := v.X.(type) {
	case *pickle.List:
		if x.Records() {
			// A flat list of entries: one device.
			c.s.Traces = [][]TraceEntry{c.traceList(x, "device_traces")}
			return
		}
		lists = x.Items
	default:
		lists = c.asList(v, "device_traces")
	}
	c.s.Traces = make([][]TraceEntry, len(lists))
	for d, lv := range lists {
		if c.err != nil {
			return
		}
		p := fmt.Sprintf("device_traces[%d]", d)
		switch l := lv.X.(type) {
		case *pickle.List:
			c.s.Traces[d] = c.traceList(l, p)
		case pickle.None:
		default:
			c.failf(p, "want list, got %s", lv.TypeName())
		}
	}
}

func (c *converter) traceList(l *pickle.List, path string) []TraceEntry {
	if l.Records() {
		t := c.entries(l)
		if t.evError != nil {
			c.failf(path, "%v", t.evError)
			return nil
		}
		return t.takeEvents()
	}
	out := make([]TraceEntry, 0, len(l.Items))
	for i, it := range l.Items {
		switch x := it.X.(type) {
		case *pickle.Dict:
			c.entryIndex = i
			out = append(out, c.entry(x))
		case *pickle.Item:
			out = append(out, c.entries((*pickle.List)(x)).event(it.N))
		default:
			c.failf(fmt.Sprintf("%s[%d]", path, i), "want trace entry dict, got %s", it.TypeName())
			return nil
		}
	}
	return out
}

func (c *converter) settings(v pickle.Value) {
	if _, ok := v.X.(pickle.None); ok {
		return
	}
	d := c.asDict(v, "allocator_settings")
	if d == nil {
		return
	}
	st := &AllocatorSettings{MaxSplitSize: -1}
	dropped := 0
	for i := 0; i+1 < len(d.KV); i += 2 {
		k, _ := c.pool.Text(d.KV[i])
		v := d.KV[i+1]
		p := "allocator_settings." + k
		switch k {
		case "PYTORCH_CUDA_ALLOC_CONF":
			st.Conf = c.asString(v, p)
		case "max_split_size":
			st.MaxSplitSize, _ = c.asInt(v, p)
		case "garbage_collection_threshold":
			st.GarbageCollectionThreshold = c.asFloat(v, p)
		case "expandable_segments":
			st.ExpandableSegments = c.asBool(v, p)
		case "roundup_power2_divisions":
			rd := c.asDict(v, p)
			if rd == nil {
				break
			}
			st.RoundupPower2Divisions = map[int64]int64{}
			for j := 0; j+1 < len(rd.KV); j += 2 {
				var key int64
				switch rd.KV[j].X.(type) {
				case pickle.Str:
					kk := c.pool.Strs[rd.KV[j].N]
					n, err := strconv.ParseInt(kk, 10, 64)
					if err != nil {
						c.failf(p, "key %q is not a number", kk)
					}
					key = n
				default:
					key, _ = c.asInt(rd.KV[j], p)
				}
				st.RoundupPower2Divisions[key], _ = c.asInt(rd.KV[j+1], p)
			}
		}
		if len(st.Raw) == maxSettingsKeys {
			dropped++
			continue
		}
		st.Raw = append(st.Raw, KeyValue{Key: k, Value: c.display(v, 0)})
		c.spend(int64(unsafe.Sizeof(KeyValue{})))
	}
	if dropped > 0 {
		c.warnf("allocator_settings holds %d keys: the first %d are kept for info, %d left out (PyTorch writes about ten)",
			maxSettingsKeys+dropped, maxSettingsKeys, dropped)
	}
	sort.Slice(st.Raw, func(i, j int) bool { return st.Raw[i].Key < st.Raw[j].Key })
	c.s.Settings = st
}

// maxSettingsKeys is the most allocator_settings keys kept in
// AllocatorSettings.Raw; the others are counted in a warning. PyTorch
// writes about ten (c10/cuda/CUDAAllocatorConfig.h).
const maxSettingsKeys = 1024

// maxDisplay is the most bytes of one setting's text: a value that nests
// references to one shared dict (a "billion laughs") costs this much, not
// its expansion.
const maxDisplay = 1024

// display formats a settings value as Python would print it, briefly: at
// most maxDisplay bytes, 32 items of a dict and 8 levels, the rest "…".
func (c *converter) display(v pickle.Value, depth int) string {
	var b strings.Builder
	c.displayTo(&b, v, depth)
	c.spend(int64(b.Len()))
	return b.String()
}

// displayTo writes v to b; it returns false once b is full.
func (c *converter) displayTo(b *strings.Builder, v pickle.Value, depth int) bool {
	if b.Len() >= maxDisplay {
		b.WriteString("…")
		return false
	}
	if depth > 8 {
		b.WriteString("…")
		return true
	}
	switch x := v.X.(type) {
	case nil:
		b.WriteString(strconv.FormatInt(v.N, 10))
	case *pickle.WideInt:
		b.WriteString(x.String())
	case pickle.Bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case pickle.None:
		b.WriteString("None")
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case pickle.Str:
		str := c.pool.Strs[v.N]
		if len(str) > maxDisplay {
			str = strings.ToValidUTF8(str[:maxDisplay], "") + "…"
		}
		b.WriteString(strconv.Quote(str))
	case *pickle.Dict:
		b.WriteString("{")
		for i := 0; i+1 < len(x.KV); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			if i >= 64 {
				b.WriteString("…")
				break
			}
			if !c.displayTo(b, x.KV[i], depth+1) {
				return false
			}
			b.WriteString(": ")
			if !c.displayTo(b, x.KV[i+1], depth+1) {
				return false
			}
		}
		b.WriteString("}")
	case *pickle.List:
		fmt.Fprintf(b, "[%d items]", len(x.Items)+c.entryCount(x))
	case *pickle.Tuple:
		fmt.Fprintf(b, "(%d items)", len(x.Items))
	default:
		b.WriteString(v.TypeName())
	}
	return true
}

func (c *converter) annotations(v pickle.Value) {
	items := c.asList(v, "external_annotations")
	c.s.Annotations = make([]Annotation, 0, len(items))
	for i, it := range items {
		p := fmt.Sprintf("external_annotations[%d]", i)
		var a Annotation
		var kv []pickle.Value
		switch x := it.X.(type) {
		case *pickle.Dict:
			kv = x.KV
		case *pickle.Item:
			// A dict with an "action" key in the annotation list: newer
			// PyTorch may put one here; keep going without it.
			c.unknownKey("external_annotations[].action")
			continue
		default:
			c.failf(p, "want dict, got %s", it.TypeName())
			return
		}
		for j := 0; j+1 < len(kv); j += 2 {
			k, _ := c.pool.Text(kv[j])
			v := kv[j+1]
			switch k {
			case "stage":
				a.Stage = c.asString(v, p+".stage")
			case "name":
				a.Name = c.asString(v, p+".name")
			case "device":
				n, _ := c.asInt(v, p+".device")
				a.Device = int(n)
			case "time_us":
				a.TimeUS, _ = c.asInt(v, p+".time_us")
			default:
				c.unknownKey("external_annotations[]." + shortKey(k))
			}
		}
		c.s.Annotations = append(c.s.Annotations, a)
	}
}

// finish checks the model (an inconsistent file is a warning, not an
// error) and sorts the side tables into the snapshot.
func (c *converter) finish() {
	c.checkSegments()
	c.checkSizes()
	c.groupByDevice()
	c.checkBlocks()
	c.checkTimes()
	if err := c.s.CheckValid(); err != nil {
		c.warnf("the file is inconsistent, figures taken from it may be wrong: %v", err)
	}
	for k := keyAction; int(k) < len(entryKeyNames); k++ {
		if n := c.entryFields[k]; n > 0 {
			c.fields["device_traces[][]."+entryKeyNames[k]] += n
		}
	}
	for k, n := range c.fields {
		if n > 0 {
			c.s.Fields = append(c.s.Fields, Count{Name: k, Count: n})
		}
	}
	sort.Slice(c.s.Fields, func(i, j int) bool { return c.s.Fields[i].Name < c.s.Fields[j].Name })
	for k, n := range c.unknown {
		c.s.Unknown = append(c.s.Unknown, Count{Name: k, Count: n})
	}
	sort.Slice(c.s.Unknown, func(i, j int) bool { return c.s.Unknown[i].Name < c.s.Unknown[j].Name })
	for path, sk := range c.skipped {
		c.warnf("%s: want str, got %s; skipped on %d trace entries, the first at index %d", path, sk.typ, sk.n, sk.first)
	}
	for field, w := range c.wide {
		if w.n == 1 {
			c.warnf("%s holds %s", w.first, w.msg)
		} else {
			c.warnf("%s holds %s; %d values of %s do not fit 64 bits", w.first, w.msg, w.n, field)
		}
	}
	for w, n := range c.warnings {
		if n > 1 {
			w = fmt.Sprintf("%s (%d times)", w, n)
		}
		c.s.Warnings = append(c.s.Warnings, w)
	}
	sort.Strings(c.s.Warnings)
}
