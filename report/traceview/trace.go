package traceview

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/snapview/snapview/analyze/frames"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/stacks"
	"github.com/snapview/snapview/snapshot"
)

// TraceFilter selects the entries [WriteTrace] lists from one device's
// trace.
type TraceFilter struct {
	// From and To are the first and last entry listed (inclusive); To -1
	// lists to the end.
	From, To int
	// Addr, when HasAddr, keeps the entries whose range [addr, addr+size)
	// holds it (oom and snapshot entries carry no address and are left
	// out).
	Addr    snapshot.Addr
	HasAddr bool
	// Focus, when not nil, keeps the entries with a frame whose
	// "filename:line name" matches it.
	Focus *regexp.Regexp
}

// TraceDevice is one device's trace and the filter applied to it; with
// Host, the pinned host allocator's trace (host_traces) instead, Device
// -1 as PyTorch numbers its host segments.
type TraceDevice struct {
	Device int
	Host   bool
	Filter TraceFilter
}

// entries is the trace td lists.
func (td *TraceDevice) entries(s *snapshot.Snapshot) []snapshot.TraceEntry {
	if td.Host {
		return s.HostTraces
	}
	return s.Traces[td.Device]
}

// keep reports whether entry i passes f; focus caches the --focus verdict
// per stack.
func (f *TraceFilter) keep(s *snapshot.Snapshot, e *snapshot.TraceEntry, focus map[snapshot.StackID]bool) bool {
	if f.HasAddr {
		if e.Action == snapshot.ActionOOM || e.Action == snapshot.ActionSnapshot || e.Flags&snapshot.FlagAddr == 0 {
			return false
		}
		if f.Addr < e.Addr || uint64(f.Addr-e.Addr) >= uint64(max(e.Size, 1)) {
			return false
		}
	}
	if f.Focus != nil {
		ok, seen := focus[e.Stack]
		if !seen {
			for _, fid := range s.Stack(e.Stack) {
				if f.Focus.MatchString(frames.FrameText(s.Frames[fid])) {
					ok = true
					break
				}
			}
			focus[e.Stack] = ok
		}
		if !ok {
			return false
		}
	}
	return true
}

// WriteTrace lists trace entries for people, one a line: the entry index,
// the time since the device's first entry (seconds, microsecond
// precision; "-" without time_us), the action, the size (bytes, binary
// units; for oom the request), the address (for oom the free device
// memory), the stream and where it was called from (the innermost user
// frame, as every view names a stack). A header per device says how many
// entries are shown of how many.
func WriteTrace(w io.Writer, s *snapshot.Snapshot, devs []TraceDevice) error {
	width := kit.Width(w)
	out := w
	if t, ok := w.(*kit.Writer); ok {
		// The lines are laid out to the width here: write past the
		// kit.Writer (which would write them one by one, unbuffered).
		if u, ok := t.Unwrapped(); ok {
			out = u
		}
	}
	bw := bufio.NewWriterSize(out, 1<<16)
	for k, td := range devs {
		trace := td.entries(s)
		focus := map[snapshot.StackID]bool{}
		to := td.Filter.To
		if to < 0 || to >= len(trace) {
			to = len(trace) - 1
		}
		var rows []int
		for i := td.Filter.From; i <= to; i++ {
			if td.Filter.keep(s, &trace[i], focus) {
				rows = append(rows, i)
			}
		}
		if k > 0 {
			bw.WriteByte('\n')
		}
		name := fmt.Sprintf("Device %d", td.Device)
		if td.Host {
			name = "Pinned host memory (the CUDA host allocator)"
		}
		head := fmt.Sprintf("%s: %s, %s shown", name, units.Plural(len(trace), "trace entry"), units.Int(len(rows)))
		switch {
		case td.Filter.From > to:
			head += " (no entry in the range)"
		case td.Filter.From > 0 || to < len(trace)-1:
			head += fmt.Sprintf(" (entries %d to %d)", td.Filter.From, to)
		}
		bw.WriteString(kit.WrapAt("", head, width))
		if len(rows) == 0 {
			continue
		}
		timed := trace[0].Flags&snapshot.FlagTime != 0
		lay := traceLayout(s, trace, rows, timed, width)
		if len(lay.dropped) > 0 {
			bw.WriteString(kit.WrapAt("", fmt.Sprintf("Left out to fit %d columns: %s (--json has them).", width, strings.Join(lay.dropped, ", ")), width))
		}
		line := appendTraceHeader(nil, lay)
		bw.Write(line)
		// Each stack's "where", wrapped to what the other columns leave.
		where := map[snapshot.StackID]string{}
		indent := "\n" + strings.Repeat(" ", lay.fixed)
		for _, i := range rows {
			e := &trace[i]
			line = line[:0]
			line = strconv.AppendInt(line, int64(i), 10)
			line = alignRight(line, 0, lay.entry)
			if lay.time > 0 {
				line = append(line, "  "...)
				start := len(line)
				if timed {
					line = units.AppendMicros(line, e.TimeUS-trace[0].TimeUS)
				} else {
					line = append(line, '-')
				}
				line = alignRight(line, start, lay.time)
			}
			line = append(line, "  "...)
			start := len(line)
			line = append(line, traceAction(s, e.Action)...)
			line = alignLeft(line, start, lay.action)
			line = append(line, "  "...)
			start = len(line)
			line = append(line, units.Bytes(e.Size)...)
			line = alignRight(line, start, lay.size)
			if lay.addr > 0 {
				line = append(line, "  "...)
				start = len(line)
				line = appendTraceAddr(line, e)
				line = alignLeft(line, start, lay.addr)
			}
			if lay.stream > 0 {
				line = append(line, "  "...)
				start = len(line)
				line = strconv.AppendUint(line, e.Stream, 10)
				line = alignLeft(line, start, lay.stream)
			}
			line = append(line, "  "...)
			wh, ok := where[e.Stack]
			if !ok {
				wh = stacks.Where(s, e.Stack)
				if utf8.RuneCountInString(wh) > lay.where {
					wh = strings.Join(kit.WrapLine(wh, lay.where, ""), indent)
				}
				where[e.Stack] = wh
			}
			line = append(line, wh...)
			if um := e.UserMetadata; um != 0 && int(um) < len(s.Strings) && s.Strings[um] != "" {
				// torch.cuda.memory._set_memory_metadata's label (also what
				// an annotate entry attaches)
				line = append(line, "  ["...)
				line = append(line, kit.Escape(s.Strings[um])...)
				line = append(line, ']')
			}
			line = append(line, '\n')
			if _, err := bw.Write(line); err != nil {
				return err
			}
		}
	}
	return bw.Flush()
}

// appendTraceHeader appends the trace's header line: the names of the
// columns lay keeps, aligned as their cells are.
func appendTraceHeader(line []byte, lay traceColumns) []byte {
	line = append(line, "entry"...)
	line = alignRight(line, 0, lay.entry)
	for _, c := range []struct {
		name  string
		w     int
		right bool
	}{{"time", lay.time, true}, {"action", lay.action, false}, {"size", lay.size, true}, {"address", lay.addr, false}, {"stream", lay.stream, false}} {
		if c.w == 0 {
			continue
		}
		line = append(line, "  "...)
		start := len(line)
		line = append(line, c.name...)
		if c.right {
			line = alignRight(line, start, c.w)
		} else {
			line = alignLeft(line, start, c.w)
		}
	}
	line = append(line, "  where\n"...)
	return line
}

// minTraceWhere is the narrowest the where column of a trace gets before
// other columns are left out.
const minTraceWhere = 20

// traceColumns is the layout of a trace listing: each column's width
// (0: left out), the width before the where column and the where
// column's, and the names of the columns left out.
type traceColumns struct {
	entry, time, action, size, addr, stream int
	fixed, where                            int
	dropped                                 []string
}

// traceLayout sizes the columns of a trace listing to the rows shown and
// leaves out the stream, the time and the address, in that order, until
// the where column gets minTraceWhere of width.
func traceLayout(s *snapshot.Snapshot, trace []snapshot.TraceEntry, rows []int, timed bool, width int) traceColumns {
	c := traceColumns{entry: len("entry"), time: len("time"), action: len("action"), size: len("size"), addr: len("address"), stream: len("stream")}
	c.entry = max(c.entry, len(strconv.Itoa(rows[len(rows)-1])))
	var buf []byte
	for _, i := range rows {
		e := &trace[i]
		if timed {
			buf = units.AppendMicros(buf[:0], e.TimeUS-trace[0].TimeUS)
			c.time = max(c.time, len(buf))
		}
		c.action = max(c.action, len(traceAction(s, e.Action)))
		c.size = max(c.size, len(units.Bytes(e.Size)))
		c.addr = max(c.addr, len(appendTraceAddr(buf[:0], e)))
		c.stream = max(c.stream, len(strconv.FormatUint(e.Stream, 10)))
	}
	fixed := func() int {
		n := c.entry
		for _, w := range []int{c.time, c.action, c.size, c.addr, c.stream} {
			if w > 0 {
				n += 2 + w
			}
		}
		return n + 2
	}
	for _, d := range []struct {
		name string
		w    *int
	}{{"stream", &c.stream}, {"time", &c.time}, {"address", &c.addr}} {
		if width-fixed() >= minTraceWhere {
			break
		}
		*d.w = 0
		c.dropped = append(c.dropped, d.name)
	}
	c.fixed = fixed()
	c.where = max(width-c.fixed, minTraceWhere)
	return c
}

// appendTraceAddr appends an entry's address, or for an oom entry the
// device's free bytes.
func appendTraceAddr(line []byte, e *snapshot.TraceEntry) []byte {
	if e.Action == snapshot.ActionOOM {
		line = append(line, units.Bytes(e.DeviceFree())...)
		return append(line, " free"...)
	}
	line = append(line, "0x"...)
	return strconv.AppendUint(line, uint64(e.Addr), 16)
}

// maxTraceAction is the widest action the trace listing shows: an
// unknown action of a newer PyTorch is shown cut to it, so that one name
// of megabytes does not pad every row to its width.
const maxTraceAction = 32

// traceAction is the action of a's row: its name, control characters
// escaped, cut to maxTraceAction bytes with "..." at the cut.
func traceAction(s *snapshot.Snapshot, a snapshot.Action) string {
	name := kit.Escape(s.ActionName(a))
	if len(name) <= maxTraceAction {
		return name
	}
	return strings.ToValidUTF8(name[:maxTraceAction-3], "") + "..."
}

// alignRight right-aligns line[start:], the field just appended, in w
// columns.
func alignRight(line []byte, start, w int) []byte {
	n := len(line) - start
	if n >= w {
		return line
	}
	pad := w - n
	line = append(line, make([]byte, pad)...)
	copy(line[start+pad:], line[start:start+n])
	for k := start; k < start+pad; k++ {
		line[k] = ' '
	}
	return line
}

// alignLeft left-aligns line[start:], the field just appended, in w
// columns.
func alignLeft(line []byte, start, w int) []byte {
	for len(line)-start < w {
		line = append(line, ' ')
	}
	return line
}

// traceEntryJSON is one entry of `trace --json`.
type traceEntryJSON struct {
	// Device is -1 for an entry of the host trace, as PyTorch numbers its
	// host segments; Host says so.
	Device int    `json:"device"`
	Host   bool   `json:"host,omitempty"`
	Entry  int    `json:"entry"`
	TimeUS *int64 `json:"time_us"`
	Action string `json:"action"`
	Size   int64  `json:"size"`
	// Addr is null for oom entries, whose DeviceFree is set.
	Addr       *uint64  `json:"addr"`
	DeviceFree *int64   `json:"device_free,omitempty"`
	Stream     uint64   `json:"stream"`
	Where      string   `json:"where"`
	Frames     []string `json:"frames"`
	// UserMetadata is the entry's user_metadata (the label
	// torch.cuda.memory._set_memory_metadata set), left out when empty.
	UserMetadata string `json:"user_metadata,omitempty"`
}

// WriteTraceJSON writes the entries WriteTrace lists as a JSON object
// {"entries": [...]}, each with its device (-1 and "host": true for the
// host trace's), index, time_us (null without
// one), action, size and addr in bytes and integers as PyTorch records
// them, stream, where, and every frame ("filename:line name", innermost
// first).
func WriteTraceJSON(w io.Writer, s *snapshot.Snapshot, devs []TraceDevice) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString("{\"entries\": [")
	first := true
	byStack := map[snapshot.StackID][]string{}
	var jb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetEscapeHTML(false)
	for _, td := range devs {
		trace := td.entries(s)
		focus := map[snapshot.StackID]bool{}
		to := td.Filter.To
		if to < 0 || to >= len(trace) {
			to = len(trace) - 1
		}
		for i := td.Filter.From; i <= to; i++ {
			e := &trace[i]
			if !td.Filter.keep(s, e, focus) {
				continue
			}
			fr, ok := byStack[e.Stack]
			if !ok {
				fr = []string{}
				for _, fid := range s.Stack(e.Stack) {
					fr = append(fr, frames.FrameText(s.Frames[fid]))
				}
				byStack[e.Stack] = fr
			}
			j := traceEntryJSON{Device: td.Device, Host: td.Host, Entry: i, Action: s.ActionName(e.Action), Size: e.Size,
				Stream: e.Stream, Where: stacks.Where(s, e.Stack), Frames: fr}
			if um := e.UserMetadata; um != 0 && int(um) < len(s.Strings) {
				j.UserMetadata = s.Strings[um]
			}
			if e.Flags&snapshot.FlagTime != 0 {
				j.TimeUS = &e.TimeUS
			}
			if e.Action == snapshot.ActionOOM {
				df := e.DeviceFree()
				j.DeviceFree = &df
			} else {
				a := uint64(e.Addr)
				j.Addr = &a
			}
			if !first {
				bw.WriteByte(',')
			}
			first = false
			jb.Reset()
			if err := enc.Encode(j); err != nil {
				return err
			}
			bw.WriteString("\n  ")
			bw.Write(bytes.TrimSuffix(jb.Bytes(), []byte("\n")))
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}
