package monitor

import (
	"bytes"
	"fmt"
	"io"
)

// Bounds of ReadLog: a memory_stats() record is about 5 KB a line and an
// nvidia-smi row under 100 bytes, so a line of 16 MiB is no log, and a
// log of 256 MiB is 50,000 memory_stats() records or 3 million
// nvidia-smi rows.
const (
	MaxLogLine  = 16 << 20
	MaxLogBytes = 256 << 20
)

// LogLimitError is the error of ReadLog for an input past one of its
// bounds.
type LogLimitError struct {
	// Limit is "line length" or "log size".
	Limit string
	// Line is the line (from 1) that passed the line length limit.
	Line int
	// Max is the bound passed, in bytes.
	Max int64
}

func (e *LogLimitError) Error() string {
	if e.Limit == "line length" {
		return fmt.Sprintf("line %d: over the line length limit: longer than %d MiB with no line break (not a text log?)", e.Line, e.Max>>20)
	}
	return fmt.Sprintf("over the log size limit: more than %d MiB", e.Max>>20)
}

// ReadLog reads a text log (JSON Lines, CSV, a JSON dump) whole, as
// io.ReadAll does, but stops with a *LogLimitError once a line passes
// MaxLogLine bytes or the log MaxLogBytes: /dev/zero, random bytes or a
// pipe that never ends cost at most those, never memory without bound.
// UTF-16 logs are counted by their bytes, which the bounds allow for.
func ReadLog(r io.Reader) ([]byte, error) {
	return readLog(r, MaxLogLine, MaxLogBytes)
}

func readLog(r io.Reader, maxLine, maxBytes int64) ([]byte, error) {
	// Chunks (4 KiB, doubling to 1 MiB) joined once at the end: at most
	// twice the log's size is held, where growing one slice can take
	// three times.
	var chunks [][]byte
	var total int64
	var lineLen int64 // bytes since the last line break
	line := 1
	size := 4 << 10
	for {
		if len(chunks) == 0 || len(chunks[len(chunks)-1]) == cap(chunks[len(chunks)-1]) {
			chunks = append(chunks, make([]byte, 0, size))
			size = min(2*size, 1<<20)
		}
		last := &chunks[len(chunks)-1]
		n, err := r.Read((*last)[len(*last):cap(*last)])
		chunk := (*last)[len(*last) : len(*last)+n]
		// Count line breaks and the length of the last line: O(n).
		if i := bytes.LastIndexByte(chunk, '\n'); i >= 0 {
			line += bytes.Count(chunk, []byte{'\n'})
			lineLen = int64(n - i - 1)
		} else {
			lineLen += int64(n)
		}
		if lineLen > maxLine {
			return nil, &LogLimitError{Limit: "line length", Line: line, Max: maxLine}
		}
		if total += int64(n); total > maxBytes {
			return nil, &LogLimitError{Limit: "log size", Max: maxBytes}
		}
		*last = (*last)[:len(*last)+n]
		if err == io.EOF {
			if len(chunks) == 1 {
				return chunks[0], nil
			}
			return bytes.Join(chunks, nil), nil
		}
		if err != nil {
			return nil, err
		}
	}
}
