package monitor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	_ "time/tzdata" // --tz zone names on machines without a zoneinfo database

	"github.com/snapview/snapview/analyze/stats"
)

const (
	// StdinPath is the file argument that reads standard input.
	StdinPath = "-"
	// StdinName names standard input in messages.
	StdinName = "<stdin>"
)

// ReadInput reads the whole file at path ("-": r, named "<stdin>"), for
// the logs and dumps (small next to snapshots), within ReadLog's bounds on
// a line's length and the log's size. name is how messages name the file;
// errors are os.Open's (naming the path) or ReadLog's prefixed with
// "NAME: ".
func ReadInput(path string, r io.Reader) (name string, b []byte, err error) {
	name, r, done, err := openInput(path, r)
	if err != nil {
		return name, nil, err
	}
	defer done()
	b, err = ReadLog(r)
	if err != nil {
		return name, nil, fmt.Errorf("%s: %w", name, err)
	}
	return name, b, nil
}

// openInput opens the file at path, or for "-" returns r, named
// "<stdin>"; done closes what was opened. The error is os.Open's.
func openInput(path string, r io.Reader) (name string, in io.Reader, done func(), err error) {
	if path == StdinPath {
		return StdinName, r, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return path, nil, nil, err
	}
	return path, f, func() { f.Close() }, nil
}

// LoadStatsDump reads a memory_stats() dump at path ("-": r).
//
// A flat dump (json.dump(torch.cuda.memory_stats(d))) does not say its
// device d: it is taken as device def; named is false then, and a device
// filter does not apply. A dump that names its devices (named true) is
// filtered as usual. Errors are ReadInput's and stats.ParseStatsJSON's,
// prefixed with "NAME: ".
func LoadStatsDump(path string, r io.Reader, def int) (name string, st []*stats.MemoryStats, named bool, err error) {
	name, b, err := ReadInput(path, r)
	if err != nil {
		return name, nil, false, err
	}
	named = stats.StatsJSONNamesDevice(b)
	if named {
		def = 0
	}
	st, err = stats.ParseStatsJSON(b, def)
	if err != nil {
		return name, nil, false, fmt.Errorf("%s: %w", name, err)
	}
	return name, st, named, nil
}

// sniffBytes is Sniff of a file read whole.
func sniffBytes(b []byte) Kind {
	return Sniff(b[:min(len(b), SniffLen)])
}

// LoadStatsLog reads a JSON Lines log of memory_stats() dumps at path
// ("-": r), or a single dump as a log of one record per device; warns are
// the log's warnings, for the caller to show. A snapshot or an nvidia-smi
// log is a WrongKind error that says what it is; the other errors are
// os.Open's (naming the path), ReadLog's and the parsers', prefixed with
// "NAME: ".
//
// The log is read as a stream (ParseStatsLog): what is held at once is
// its first SniffLen bytes, one line and the records parsed, whatever its
// size. Only a single dump (a JSON object over several lines) is read
// whole, within ReadLog's bounds.
func LoadStatsLog(path string, r io.Reader) (name string, l *StatsLog, warns []string, err error) {
	name, r, done, err := openInput(path, r)
	if err != nil {
		return name, nil, nil, err
	}
	defer done()
	br := bufio.NewReaderSize(r, SniffLen)
	head, err := br.Peek(SniffLen)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
		return name, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	switch kind := Sniff(head); kind {
	case KindSnapshot, KindSMI:
		return name, nil, nil, WrongKind(path, kind, "a memory_stats() log")
	case KindStats:
		l, err := loadStatsDumpAsLog(br)
		if err != nil {
			return name, nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		return name, l, nil, nil
	}
	l, err = ParseStatsLog(br)
	if err != nil {
		return name, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return name, l, l.Warnings, nil
}

// loadStatsDumpAsLog reads a memory_stats() dump whole (within ReadLog's
// bounds) as a log of one record per device. A log of one line looks like
// a dump: it is read as a log first, to keep its "step" and "time".
func loadStatsDumpAsLog(r io.Reader) (*StatsLog, error) {
	b, err := ReadLog(r)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(bytes.TrimSpace(b), []byte("\n")) {
		if l, err := ParseStatsLog(bytes.NewReader(b)); err == nil {
			return l, nil
		}
	}
	st, err := stats.ParseStatsJSON(b, 0)
	if err != nil {
		return nil, err
	}
	l := &StatsLog{}
	for _, s := range st {
		l.Records = append(l.Records, StatsRecord{Line: 1, Stats: s})
	}
	return l, nil
}

// LoadSMI reads an nvidia-smi CSV log at path ("-": r) written in zone
// loc; its warnings are in the log (SMILog.Warnings), for the caller to
// show. A snapshot or a memory_stats() file is a WrongKind error that says
// what it is; the other errors are ReadInput's and ParseSMI's, prefixed
// with "NAME: ".
func LoadSMI(path string, r io.Reader, loc *time.Location) (string, *SMILog, error) {
	name, b, err := ReadInput(path, r)
	if err != nil {
		return name, nil, err
	}
	switch kind := sniffBytes(b); kind {
	case KindSnapshot, KindStats, KindStatsLog:
		return name, nil, WrongKind(path, kind, "an nvidia-smi CSV log")
	}
	l, err := ParseSMI(bytes.NewReader(b), loc)
	if err != nil {
		return name, nil, fmt.Errorf("%s: %w", name, err)
	}
	return name, l, nil
}

// WrongKind is the error for a file of another kind than a command reads
// (want: "a memory_stats() log"): "NAME: a KIND, not WANT: " and the
// command that reads it.
func WrongKind(path string, kind Kind, want string) error {
	name := path
	if path == StdinPath {
		name = StdinName
	}
	hint := ""
	switch kind {
	case KindStats:
		hint = "snapview summary reads it (--format torch: its memory_summary() table)"
	case KindStatsLog:
		hint = "snapview stats reads it (per step, and whether memory keeps climbing)"
	case KindSMI:
		hint = "snapview smi reads it, and snapview report SNAPSHOT --smi FILE sets it against a snapshot"
	case KindSnapshot:
		hint = "snapview summary, segments, state, leaks and report read it"
	}
	article := "a"
	if kind == KindSMI {
		article = "an"
	}
	return fmt.Errorf("%s: %s %s, not %s: %s", name, article, kind, want, hint)
}

// NotSnapshot is the WrongKind error for the file at path when it is one
// of the monitoring files (a memory_stats() dump or log, an nvidia-smi
// log) given where a memory snapshot is read: it names what the file is
// and which command reads it. nil for any other file (SniffFile).
func NotSnapshot(path string) error {
	switch kind := SniffFile(path); kind {
	case KindStats, KindStatsLog, KindSMI:
		return WrongKind(path, kind, "a memory snapshot")
	}
	return nil
}

// ParseZone reads a time zone as --tz gives it: an IANA zone name
// ("Europe/Berlin"), "UTC", "Local" (also ""), or a fixed offset
// ("+02:00", "-0530", "UTC+2", up to 14 hours). The error says what is
// wanted, without the flag's name.
func ParseZone(s string) (*time.Location, error) {
	switch s {
	case "", "Local", "local":
		return time.Local, nil
	case "UTC", "utc", "Z":
		return time.UTC, nil
	}
	off := s
	for _, p := range []string{"UTC", "GMT"} {
		if len(off) > len(p) && off[:len(p)] == p {
			off = off[len(p):]
		}
	}
	for _, layout := range []string{"-07:00", "-0700", "-07"} {
		if t, err := time.Parse(layout, off); err == nil && (off[0] == '+' || off[0] == '-') {
			_, sec := t.Zone()
			return time.FixedZone(s, sec), nil
		}
	}
	if len(off) >= 2 && (off[0] == '+' || off[0] == '-') {
		var h int
		if _, err := fmt.Sscanf(off[1:], "%d", &h); err == nil && h <= 14 && fmt.Sprint(h) == off[1:] {
			if off[0] == '-' {
				h = -h
			}
			return time.FixedZone(s, h*3600), nil
		}
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		return nil, fmt.Errorf("%q: want a zone name (Europe/Berlin), UTC, Local or an offset (+02:00)", s)
	}
	return loc, nil
}
