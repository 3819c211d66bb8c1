package monitor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"

	"github.com/snapview/snapview/analyze/stats"
)

// StatsRecord is one line of a memory_stats() log.
type StatsRecord struct {
	// Line is the line number in the file, from 1.
	Line int
	// Step is the record's "step" field; HasStep says whether it had one.
	Step    int64
	HasStep bool
	// TimeUS is the record's "time" field in microseconds since the Unix
	// epoch; HasTime says whether it had one.
	TimeUS  int64
	HasTime bool
	// Stats are the memory_stats() figures, all exact.
	Stats *stats.MemoryStats
}

// StatsLog is a JSON Lines log of memory_stats() dumps, in file order.
type StatsLog struct {
	Records []StatsRecord
	// Warnings are faults tolerated (an incomplete last line).
	Warnings []string
}

// ParseStatsLog reads a JSON Lines log of torch.cuda.memory_stats() dumps,
// one JSON object per line, as a training loop writes it:
//
//	rec = {"step": step, "time": time.time()}
//	rec.update(torch.cuda.memory_stats())
//	log.write(json.dumps(rec) + "\n")
//
// Each object is the flat dict itself or holds it under "memory_stats";
// "step" (an integer), "time" (seconds since the Unix epoch, a number, or
// an RFC 3339 string) and "device" (an ordinal, default 0) are optional,
// and other keys whose values are not integers (a loss, a learning rate)
// are ignored. Blank lines are skipped. A line that is not such an object
// is an error "line N: fault"; only a last line with no newline that does
// not parse (the log was being written) is left out with a warning.
// UTF-16 and byte order marks are read (as [Text] reads them).
//
// The log is read as a stream, a line at a time: what it holds at once is
// one line (at most MaxLogLine bytes) and the records, whatever the log's
// size; past MaxLogLine bytes in a line, or MaxLogBytes in all, it stops
// with a *LogLimitError, as ReadLog does.
func ParseStatsLog(r io.Reader) (*StatsLog, error) {
	br := bufio.NewReaderSize(textReader(r), 64<<10)
	log := &StatsLog{}
	var total int64
	for n := 1; ; n++ {
		line, err := readLine(br, n)
		if err != nil && !errors.Is(err, io.EOF) {
			var le *LogLimitError
			if errors.As(err, &le) {
				return nil, err
			}
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if total += int64(len(line)); total > MaxLogBytes {
			return nil, &LogLimitError{Limit: "log size", Max: MaxLogBytes}
		}
		last := errors.Is(err, io.EOF)
		if t := bytes.TrimSpace(line); len(t) > 0 {
			rec, perr := parseStatsRecord(t)
			if perr != nil {
				if last && line[len(line)-1] != '\n' && len(log.Records) > 0 {
					log.Warnings = append(log.Warnings, fmt.Sprintf("line %d: incomplete last line left out (%v)", n, perr))
					break
				}
				return nil, fmt.Errorf("line %d: %w", n, perr)
			}
			rec.Line = n
			log.Records = append(log.Records, rec)
		}
		if last {
			break
		}
	}
	if len(log.Records) == 0 {
		return nil, errors.New("no memory_stats() records")
	}
	return log, nil
}

// readLine returns line n of br with its line break, io.EOF with the last
// line (which may be empty), or a *LogLimitError once the line passes
// MaxLogLine bytes. The line is valid until the next read of br.
func readLine(br *bufio.Reader, n int) ([]byte, error) {
	var long []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(long)+len(frag) > MaxLogLine {
			return nil, &LogLimitError{Limit: "line length", Line: n, Max: MaxLogLine}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, frag...)
			continue
		}
		if long == nil {
			return frag, err
		}
		return append(long, frag...), err
	}
}

// textReader reads r as UTF-8: a UTF-8 byte order mark is dropped, and
// UTF-16 with a byte order mark (PowerShell's redirection writes it) is
// decoded, as [Text] does for a whole log.
func textReader(r io.Reader) io.Reader {
	return transform.NewReader(r, unicode.BOMOverride(encoding.Nop.NewDecoder()))
}

// parseStatsRecord decodes one line.
func parseStatsRecord(b []byte) (StatsRecord, error) {
	var rec StatsRecord
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		return rec, fmt.Errorf("not a JSON object: %w", err)
	}
	if obj == nil {
		return rec, errors.New("want a JSON object, got null")
	}
	device := 0
	if raw, ok := obj["device"]; ok {
		if err := json.Unmarshal(raw, &device); err != nil || device < 0 {
			return rec, fmt.Errorf(`"device": want a device ordinal, got %s`, short(raw))
		}
	}
	if raw, ok := obj["step"]; ok {
		if err := json.Unmarshal(raw, &rec.Step); err != nil {
			return rec, fmt.Errorf(`"step": want an integer, got %s`, short(raw))
		}
		rec.HasStep = true
	}
	if raw, ok := obj["time"]; ok {
		us, err := parseLogTime(raw)
		if err != nil {
			return rec, fmt.Errorf(`"time": %w`, err)
		}
		rec.TimeUS, rec.HasTime = us, true
	}
	fields := obj
	if raw, ok := obj["memory_stats"]; ok {
		if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
			return rec, fmt.Errorf(`"memory_stats": want a JSON object, got %s`, short(raw))
		}
	}
	flat, err := stats.FlatFromJSON(fields)
	if err != nil {
		return rec, err
	}
	st, err := stats.StatsFromFlat(device, flat)
	if err != nil {
		return rec, err
	}
	rec.Stats = st
	return rec, nil
}

// parseLogTime reads a "time" value: seconds since the Unix epoch (as
// time.time() gives them) or an RFC 3339 string; it returns microseconds.
func parseLogTime(raw json.RawMessage) (int64, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, fmt.Errorf("want seconds since the epoch or an RFC 3339 time, got %q", s)
		}
		return t.UnixMicro(), nil
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 1e11 {
		return 0, fmt.Errorf("want seconds since the epoch, got %s", short(raw))
	}
	return int64(math.Round(f * 1e6)), nil
}

// short shortens a raw JSON value for a message.
func short(v []byte) string {
	const max = 40
	if len(v) > max {
		return string(v[:max]) + "…"
	}
	return string(v)
}
