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
	bw := bufio.NewWriterSize(w, 1<<16)
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
	first := true
	var line []byte
	emit := func() {
		if !first {
			bw.WriteString(",\n")
		}
		first = false
		bw.Write(line)
	}
	for k, in := range inputs {
		s := in.Snapshot
		for _, r := range in.Results {
			pid := r.Device
			name := "cuda:" + strconv.Itoa(r.Device)
			if len(inputs) > 1 {
				pid += 1000 * k
				name = in.Name + " " + name
			}
			trace := s.Traces[r.Device]
			timed := len(trace) > 0 && trace[0].Flags&snapshot.FlagTime != 0
			ts := func(i int) int64 {
				if timed {
					return trace[i].TimeUS
				}
				return int64(i)
			}
			line = append(line[:0], `{"name":"process_name","ph":"M","pid":`...)
			line = strconv.AppendInt(line, int64(pid), 10)
			line = append(line, `,"args":{"name":`...)
			line = appendJSONString(line, name)
			line = append(line, "}}"...)
			emit()
			threads := []string{"memory", "record_function"}
			if slices.ContainsFunc(trace, func(e snapshot.TraceEntry) bool { return e.Action == snapshot.ActionAnnotate }) {
				threads = append(threads, "annotate")
			}
			for tid, tn := range threads {
				line = append(line[:0], `{"name":"thread_name","ph":"M","pid":`...)
				line = strconv.AppendInt(line, int64(pid), 10)
				line = append(line, `,"tid":`...)
				line = strconv.AppendInt(line, int64(tid), 10)
				line = append(line, `,"args":{"name":"`+tn+`"}}`...)
				emit()
			}
			series := []struct {
				name string
				v    []int64
				last int64
			}{{"allocated", r.Allocated, -1}, {"active", r.Active, -1}, {"reserved", r.Reserved, -1}}
			for i := range trace {
				if i+1 < len(trace) && ts(i+1) == ts(i) {
					continue
				}
				for j := range series {
					c := &series[j]
					if c.v[i] == c.last {
						continue
					}
					c.last = c.v[i]
					line = append(line[:0], `{"name":"`+c.name+`","ph":"C","pid":`...)
					line = strconv.AppendInt(line, int64(pid), 10)
					line = append(line, `,"tid":0,"ts":`...)
					line = strconv.AppendInt(line, ts(i), 10)
					line = append(line, `,"args":{"bytes":`...)
					line = strconv.AppendInt(line, c.v[i], 10)
					line = append(line, "}}"...)
					emit()
				}
			}
			for _, i := range r.OOMs {
				e := &trace[i]
				line = append(line[:0], `{"name":"oom","ph":"i","s":"p","pid":`...)
				line = strconv.AppendInt(line, int64(pid), 10)
				line = append(line, `,"tid":0,"ts":`...)
				line = strconv.AppendInt(line, ts(i), 10)
				line = append(line, `,"args":{"entry":`...)
				line = strconv.AppendInt(line, int64(i), 10)
				line = append(line, `,"requested_bytes":`...)
				line = strconv.AppendInt(line, e.Size, 10)
				line = append(line, `,"device_free_bytes":`...)
				line = strconv.AppendInt(line, e.DeviceFree(), 10)
				line = append(line, `,"stream":`...)
				line = strconv.AppendUint(line, e.Stream, 10)
				line = append(line, "}}"...)
				emit()
			}
			for i := range trace {
				e := &trace[i]
				if e.Action != snapshot.ActionAnnotate {
					continue
				}
				line = append(line[:0], `{"name":"annotate","ph":"i","s":"t","pid":`...)
				line = strconv.AppendInt(line, int64(pid), 10)
				line = append(line, `,"tid":`+strconv.Itoa(chromeAnnotateTid)+`,"ts":`...)
				line = strconv.AppendInt(line, ts(i), 10)
				line = append(line, `,"args":{"entry":`...)
				line = strconv.AppendInt(line, int64(i), 10)
				line = append(line, `,"address":`...)
				line = strconv.AppendUint(line, uint64(e.Addr), 10)
				line = append(line, `,"label":`...)
				label := ""
				if int(e.UserMetadata) < len(s.Strings) {
					label = s.Strings[e.UserMetadata]
				}
				line = appendJSONString(line, label)
				line = append(line, "}}"...)
				emit()
			}
			if !timed || len(trace) == 0 {
				continue
			}
			for _, rg := range Ranges(s, r.Device, trace[len(trace)-1].TimeUS) {
				line = append(line[:0], `{"name":`...)
				line = appendJSONString(line, rg.Name)
				line = append(line, `,"ph":"X","pid":`...)
				line = strconv.AppendInt(line, int64(pid), 10)
				line = append(line, `,"tid":1,"ts":`...)
				line = strconv.AppendInt(line, rg.StartUS, 10)
				line = append(line, `,"dur":`...)
				line = strconv.AppendInt(line, rg.EndUS-rg.StartUS, 10)
				if rg.Open {
					line = append(line, `,"args":{"unterminated":true}`...)
				}
				line = append(line, '}')
				emit()
			}
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
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
