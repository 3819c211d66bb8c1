package export

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"strconv"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// ChromeInput is one snapshot for [WriteChromeTrace], with the replay of
// each device that has a trace.
type ChromeInput struct {
	Snapshot *snapshot.Snapshot
	// Name is the file's name, in process names when there are several
	// inputs and in the metadata.
	Name    string
	Results []*replay.Result
}

// Thread ids of the Chrome trace: memory counters and OOMs, record_function
// ranges.
const (
	chromeMemoryTid   = 0
	chromeRangesTid   = 1
	chromeAnnotateTid = 2
)

// WriteChromeTrace writes the inputs as Chrome trace JSON (the Trace Event
// Format that chrome://tracing and the Perfetto UI read): a JSON object
// whose "traceEvents" hold, per device (one process, pid = device, or
// 1000×input index + device for several inputs, named "cuda:D"):
//
//   - counter events (ph "C") "allocated", "active" and "reserved", each
//     with args {"bytes": N}: allocated_bytes, active_bytes and
//     reserved_bytes (all pools) after the last trace entry of each
//     timestamp, written when the figure changes;
//   - an instant event (ph "i", process scope) "oom" at each oom entry, with
//     the request and the free device memory in bytes;
//   - record_function ranges (external_annotations START/END pairs of a
//     name, innermost END first) as complete events (ph "X") on thread 1; a
//     range without its END runs to the device's last entry, with args
//     {"unterminated": true};
//   - PyTorch 2.14's annotate entries (torch.cuda.memory._annotate_tensor:
//     user_metadata attached to a live allocation) as instant events (ph
//     "i", thread scope) "annotate" on thread 2, with args {"entry",
//     "address", "label"}; the thread is named only where there are some.
//
// ts and dur are microseconds, the trace's own time_us values (since the
// Unix epoch); a trace without time_us (PyTorch before 2.2) uses the entry
// index instead, as "otherData" says, with labels and sources. Errors are
// w's.
func WriteChromeTrace(w io.Writer, inputs []ChromeInput, labels []Label) error {
	cw := &chromeWriter{bw: bufio.NewWriterSize(w, 1<<16), first: true}
	cw.header(inputs, labels)
	for k, in := range inputs {
		for _, r := range in.Results {
			d := chromeDevice{s: in.Snapshot, r: r, pid: r.Device, trace: in.Snapshot.Traces[r.Device]}
			d.timed = len(d.trace) > 0 && d.trace[0].Flags&snapshot.FlagTime != 0
			name := "cuda:" + strconv.Itoa(r.Device)
			if len(inputs) > 1 {
				d.pid += 1000 * k
				name = in.Name + " " + name
			}
			cw.names(d, name)
			cw.counters(d)
			cw.ooms(d)
			cw.annotations(d)
			cw.ranges(d)
		}
	}
	cw.bw.WriteString("\n]}\n")
	return cw.bw.Flush()
}

// chromeWriter writes the events of a Chrome trace, one a line, with the
// commas between them.
type chromeWriter struct {
	bw    *bufio.Writer
	line  []byte // the event being built, reused from one to the next
	first bool   // no event written yet
}

// chromeDevice is one device's process in a Chrome trace.
type chromeDevice struct {
	s     *snapshot.Snapshot
	r     *replay.Result
	pid   int
	trace []snapshot.TraceEntry
	timed bool // the trace has time_us
}

// ts is entry i's timestamp: its time_us, or i in a trace without time.
func (d chromeDevice) ts(i int) int64 {
	if d.timed {
		return d.trace[i].TimeUS
	}
	return int64(i)
}

// emit writes line as the next event and keeps its buffer for the next.
func (cw *chromeWriter) emit(line []byte) {
	if !cw.first {
		cw.bw.WriteString(",\n")
	}
	cw.first = false
	cw.bw.Write(line)
	cw.line = line
}

// header writes the trace's "otherData" (producer, labels and the inputs'
// names) and opens "traceEvents".
func (cw *chromeWriter) header(inputs []ChromeInput, labels []Label) {
	bw := cw.bw
	bw.WriteString(`{"displayTimeUnit":"ms","otherData":{"producer":"snapview export --format chrome-trace","ts_unit":"us"`)
	for _, l := range labels {
		bw.WriteByte(',')
		writeJSONString(bw, l.Key)
		bw.WriteByte(':')
		writeJSONString(bw, l.Value)
	}
	for i, in := range inputs {
		bw.WriteString(`,"source_` + strconv.Itoa(i) + `":`)
		writeJSONString(bw, in.Name)
	}
	bw.WriteString("},\n\"traceEvents\":[\n")
}

// names writes the metadata events naming d's process and its threads
// (annotate only when the trace has annotate entries).
func (cw *chromeWriter) names(d chromeDevice, name string) {
	line := append(cw.line[:0], `{"name":"process_name","ph":"M","pid":`...)
	line = strconv.AppendInt(line, int64(d.pid), 10)
	line = append(line, `,"args":{"name":`...)
	line = appendJSONString(line, name)
	line = append(line, "}}"...)
	cw.emit(line)
	threads := []string{"memory", "record_function"}
	if slices.ContainsFunc(d.trace, func(e snapshot.TraceEntry) bool { return e.Action == snapshot.ActionAnnotate }) {
		threads = append(threads, "annotate")
	}
	for tid, tn := range threads {
		line = append(cw.line[:0], `{"name":"thread_name","ph":"M","pid":`...)
		line = strconv.AppendInt(line, int64(d.pid), 10)
		line = append(line, `,"tid":`...)
		line = strconv.AppendInt(line, int64(tid), 10)
		line = append(line, `,"args":{"name":"`+tn+`"}}`...)
		cw.emit(line)
	}
}

// counters writes the allocated, active and reserved counter events:
// each figure after the last entry of a timestamp, where it changed.
func (cw *chromeWriter) counters(d chromeDevice) {
	series := []struct {
		name string
		v    []int64
		last int64
	}{{"allocated", d.r.Allocated, -1}, {"active", d.r.Active, -1}, {"reserved", d.r.Reserved, -1}}
	for i := range d.trace {
		if i+1 < len(d.trace) && d.ts(i+1) == d.ts(i) {
			continue
		}
		for j := range series {
			c := &series[j]
			if c.v[i] == c.last {
				continue
			}
			c.last = c.v[i]
			line := append(cw.line[:0], `{"name":"`+c.name+`","ph":"C","pid":`...)
			line = strconv.AppendInt(line, int64(d.pid), 10)
			line = append(line, `,"tid":0,"ts":`...)
			line = strconv.AppendInt(line, d.ts(i), 10)
			line = append(line, `,"args":{"bytes":`...)
			line = strconv.AppendInt(line, c.v[i], 10)
			line = append(line, "}}"...)
			cw.emit(line)
		}
	}
}

// ooms writes an instant event at each oom entry of d.
func (cw *chromeWriter) ooms(d chromeDevice) {
	for _, i := range d.r.OOMs {
		e := &d.trace[i]
		line := append(cw.line[:0], `{"name":"oom","ph":"i","s":"p","pid":`...)
		line = strconv.AppendInt(line, int64(d.pid), 10)
		line = append(line, `,"tid":0,"ts":`...)
		line = strconv.AppendInt(line, d.ts(i), 10)
		line = append(line, `,"args":{"entry":`...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, `,"requested_bytes":`...)
		line = strconv.AppendInt(line, e.Size, 10)
		line = append(line, `,"device_free_bytes":`...)
		line = strconv.AppendInt(line, e.DeviceFree(), 10)
		line = append(line, `,"stream":`...)
		line = strconv.AppendUint(line, e.Stream, 10)
		line = append(line, "}}"...)
		cw.emit(line)
	}
}

// annotations writes an instant event on the annotate thread at each
// annotate entry of d, with the label it attached.
func (cw *chromeWriter) annotations(d chromeDevice) {
	for i := range d.trace {
		e := &d.trace[i]
		if e.Action != snapshot.ActionAnnotate {
			continue
		}
		line := append(cw.line[:0], `{"name":"annotate","ph":"i","s":"t","pid":`...)
		line = strconv.AppendInt(line, int64(d.pid), 10)
		line = append(line, `,"tid":`+strconv.Itoa(chromeAnnotateTid)+`,"ts":`...)
		line = strconv.AppendInt(line, d.ts(i), 10)
		line = append(line, `,"args":{"entry":`...)
		line = strconv.AppendInt(line, int64(i), 10)
		line = append(line, `,"address":`...)
		line = strconv.AppendUint(line, uint64(e.Addr), 10)
		line = append(line, `,"label":`...)
		label := ""
		if int(e.UserMetadata) < len(d.s.Strings) {
			label = d.s.Strings[e.UserMetadata]
		}
		line = appendJSONString(line, label)
		line = append(line, "}}"...)
		cw.emit(line)
	}
}

// ranges writes d's record_function ranges as complete events on the
// record_function thread; none when the trace has no time_us.
func (cw *chromeWriter) ranges(d chromeDevice) {
	if !d.timed || len(d.trace) == 0 {
		return
	}
	for _, rg := range Ranges(d.s, d.r.Device, d.trace[len(d.trace)-1].TimeUS) {
		line := append(cw.line[:0], `{"name":`...)
		line = appendJSONString(line, rg.Name)
		line = append(line, `,"ph":"X","pid":`...)
		line = strconv.AppendInt(line, int64(d.pid), 10)
		line = append(line, `,"tid":1,"ts":`...)
		line = strconv.AppendInt(line, rg.StartUS, 10)
		line = append(line, `,"dur":`...)
		line = strconv.AppendInt(line, rg.EndUS-rg.StartUS, 10)
		if rg.Open {
			line = append(line, `,"args":{"unterminated":true}`...)
		}
		line = append(line, '}')
		cw.emit(line)
	}
}

// Range is one record_function range of a device (steps.Range).
type Range = steps.Range

// Ranges pairs the device's external_annotations START and END entries
// (steps.Ranges).
func Ranges(s *snapshot.Snapshot, device int, endUS int64) []Range {
	return steps.Ranges(s, device, endUS)
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

func writeJSONString(w *bufio.Writer, s string) {
	q, _ := json.Marshal(s)
	w.Write(q)
}
