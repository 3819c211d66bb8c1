package dump

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/snapview/snapview/snapshot"
)

// JSON writes s to w in the JSON layout MemoryViz accepts (and
// snapshot.Decode reads): the structure Pickle writes, with a
// segment_pool_id as a two-item array. JSON cannot share, so each frames
// list is written in full (each stack is encoded once and copied). A
// float that JSON cannot hold (NaN, ±Inf) is written as null. It returns
// w's error.
func JSON(w io.Writer, s *snapshot.Snapshot) error {
	j := &jsoner{w: bufio.NewWriterSize(w, 256<<10), s: s}
	j.stacks = make([][]byte, len(s.Stacks))
	(&walker{s: s, o: j}).snapshot()
	j.w.WriteByte('\n')
	if err := j.w.Flush(); err != nil {
		return err
	}
	return nil
}

type jsoner struct {
	w      *bufio.Writer
	s      *snapshot.Snapshot
	first  []bool // one per open list or dict: no item written yet
	stacks [][]byte
	tmp    []byte
}

func (j *jsoner) err() error { return nil }
func (j *jsoner) commit()    {}

func (j *jsoner) open(c byte) {
	j.w.WriteByte(c)
	j.first = append(j.first, true)
}

func (j *jsoner) close(c byte) {
	j.w.WriteByte(c)
	j.first = j.first[:len(j.first)-1]
}

func (j *jsoner) beginDict() { j.open('{') }
func (j *jsoner) endDict()   { j.close('}') }
func (j *jsoner) beginList() { j.open('[') }
func (j *jsoner) endList()   { j.close(']') }

func (j *jsoner) item() {
	f := &j.first[len(j.first)-1]
	if !*f {
		j.w.WriteString(", ")
	}
	*f = false
}

func (j *jsoner) key(k key) { j.strKey(keyNames[k]) }

func (j *jsoner) strKey(s string) {
	j.item()
	j.str(s)
	j.w.WriteString(": ")
}

func (j *jsoner) int(v int64) {
	j.tmp = strconv.AppendInt(j.tmp[:0], v, 10)
	j.w.Write(j.tmp)
}

func (j *jsoner) uint(v uint64) {
	j.tmp = strconv.AppendUint(j.tmp[:0], v, 10)
	j.w.Write(j.tmp)
}

func (j *jsoner) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		j.w.WriteString("null")
		return
	}
	j.tmp = strconv.AppendFloat(j.tmp[:0], f, 'g', -1, 64)
	if !containsAny(j.tmp, ".eE") {
		j.tmp = append(j.tmp, ".0"...)
	}
	j.w.Write(j.tmp)
}

func containsAny(b []byte, chars string) bool {
	for _, c := range b {
		for i := 0; i < len(chars); i++ {
			if c == chars[i] {
				return true
			}
		}
	}
	return false
}

func (j *jsoner) bool(b bool) {
	if b {
		j.w.WriteString("true")
	} else {
		j.w.WriteString("false")
	}
}

func (j *jsoner) none() { j.w.WriteString("null") }

func (j *jsoner) str(s string) {
	j.tmp = appendJSONString(j.tmp[:0], s)
	j.w.Write(j.tmp)
}

func (j *jsoner) poolID(p snapshot.PoolID) {
	j.tmp = append(j.tmp[:0], '[')
	j.tmp = strconv.AppendInt(j.tmp, p[0], 10)
	j.tmp = append(j.tmp, ", "...)
	j.tmp = strconv.AppendInt(j.tmp, p[1], 10)
	j.tmp = append(j.tmp, ']')
	j.w.Write(j.tmp)
}

func (j *jsoner) stack(id snapshot.StackID) {
	if id < 0 || int(id) >= len(j.stacks) {
		id = snapshot.NoStack
	}
	if j.stacks[id] == nil {
		b := []byte{'['}
		for k, f := range j.s.Stack(id) {
			if k > 0 {
				b = append(b, ", "...)
			}
			fr := &j.s.Frames[f]
			b = append(b, `{"name": `...)
			b = appendJSONString(b, fr.Name)
			b = append(b, `, "filename": `...)
			b = appendJSONString(b, fr.Filename)
			b = append(b, `, "line": `...)
			b = strconv.AppendInt(b, fr.Line, 10)
			b = append(b, '}')
		}
		j.stacks[id] = append(b, ']')
	}
	j.w.Write(j.stacks[id])
}

func (j *jsoner) tableStr(id snapshot.StrID) {
	s := ""
	if int(id) < len(j.s.Strings) {
		s = j.s.Strings[id]
	}
	j.str(s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
