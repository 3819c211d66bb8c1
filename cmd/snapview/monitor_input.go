package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
	_ "time/tzdata" // --tz zone names on machines without a zoneinfo database

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/analyze/stats"
)

// sniffInput says what the file at path holds (monitor.Sniff). For "-" it
// peeks at stdin and returns the reader to use instead of it. A file that
// cannot be opened is KindUnknown: the snapshot loader then says why.
func sniffInput(path string, stdin io.Reader) (monitor.Kind, io.Reader) {
	if path == stdinPath {
		if f, ok := stdin.(*os.File); ok && isTerminal(f) {
			return monitor.KindUnknown, stdin
		}
		br := bufio.NewReaderSize(stdin, monitor.SniffLen)
		head, _ := br.Peek(monitor.SniffLen)
		return monitor.Sniff(head), br
	}
	f, err := os.Open(path)
	if err != nil {
		return monitor.KindUnknown, stdin
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return monitor.KindUnknown, stdin
	}
	head := make([]byte, monitor.SniffLen)
	n, _ := io.ReadFull(f, head)
	return monitor.Sniff(head[:n]), stdin
}

// readInput reads the whole file at path ("-": r), for the logs and dumps
// (small next to snapshots), within monitor.ReadLog's bounds on a line's
// length and the log's size. Errors name the file.
func readInput(path string, r io.Reader) (string, []byte, error) {
	name := path
	if path == stdinPath {
		name = stdinName
	} else {
		f, err := os.Open(path)
		if err != nil {
			return name, nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := monitor.ReadLog(r)
	if err != nil {
		return name, nil, fmt.Errorf("%s: %w", name, err)
	}
	return name, b, nil
}

// loadStatsDump reads a memory_stats() dump.
//
// A flat dump (json.dump(torch.cuda.memory_stats(d))) does not say its
// device d: it is taken as device, or 0 when device is not set; named is
// false then, and --device is no filter. A dump that names its devices
// (named true) is filtered by --device as usual.
func loadStatsDump(path string, r io.Reader, device deviceFlag) (name string, st []*stats.MemoryStats, named bool, err error) {
	name, b, err := readInput(path, r)
	if err != nil {
		return name, nil, false, err
	}
	named = stats.StatsJSONNamesDevice(b)
	def := 0
	if device.set && !named {
		def = device.n
	}
	st, err = stats.ParseStatsJSON(b, def)
	if err != nil {
		return name, nil, false, fmt.Errorf("%s: %w", name, err)
	}
	return name, st, named, nil
}

// sniffBytes is monitor.Sniff of a file read whole.
func sniffBytes(b []byte) monitor.Kind {
	return monitor.Sniff(b[:min(len(b), monitor.SniffLen)])
}

// loadStatsLog reads a JSON Lines log of memory_stats() dumps, or a single
// dump as a log of one record per device; its warnings go to errOut. A
// snapshot or an nvidia-smi log is an error that says what it is.
func loadStatsLog(path string, r io.Reader, errOut io.Writer) (string, *monitor.StatsLog, error) {
	name, b, err := readInput(path, r)
	if err != nil {
		return name, nil, err
	}
	switch kind := sniffBytes(b); kind {
	case monitor.KindSnapshot, monitor.KindSMI:
		return name, nil, wrongKind(path, kind, "a memory_stats() log")
	case monitor.KindStats:
		// A log of one line looks like a dump: read it as a log first,
		// to keep its "step" and "time".
		if !bytes.Contains(bytes.TrimSpace(b), []byte("\n")) {
			if l, err := monitor.ParseStatsLog(bytes.NewReader(b)); err == nil {
				return name, l, nil
			}
		}
		stats, err := stats.ParseStatsJSON(b, 0)
		if err != nil {
			return name, nil, fmt.Errorf("%s: %w", name, err)
		}
		l := &monitor.StatsLog{}
		for _, st := range stats {
			l.Records = append(l.Records, monitor.StatsRecord{Line: 1, Stats: st})
		}
		return name, l, nil
	}
	l, err := monitor.ParseStatsLog(bytes.NewReader(b))
	if err != nil {
		return name, nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, w := range l.Warnings {
		fmt.Fprintf(errOut, "warning: %s: %s\n", name, w)
	}
	return name, l, nil
}

// loadSMI reads an nvidia-smi CSV log written in zone loc; its warnings go
// to errOut. A snapshot or a memory_stats() file is an error that says
// what it is.
func loadSMI(path string, r io.Reader, loc *time.Location, errOut io.Writer) (string, *monitor.SMILog, error) {
	name, b, err := readInput(path, r)
	if err != nil {
		return name, nil, err
	}
	switch kind := sniffBytes(b); kind {
	case monitor.KindSnapshot, monitor.KindStats, monitor.KindStatsLog:
		return name, nil, wrongKind(path, kind, "an nvidia-smi CSV log")
	}
	l, err := monitor.ParseSMI(bytes.NewReader(b), loc)
	if err != nil {
		return name, nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, w := range l.Warnings {
		fmt.Fprintf(errOut, "warning: %s: %s\n", name, w)
	}
	return name, l, nil
}

// pickDevices keeps the items of the device --device names (all without
// it); a device the file does not have is a usage error.
func pickDevices[T any](f deviceFlag, name string, items []T, device func(T) int) ([]T, error) {
	if !f.set {
		return items, nil
	}
	var keep []T
	var have []int
	for _, it := range items {
		have = append(have, device(it))
		if device(it) == f.n {
			keep = append(keep, it)
		}
	}
	if keep == nil {
		return nil, usageErrorf("--device %d: %s has no device %d (devices: %s)", f.n, name, f.n, joinInts(have))
	}
	return keep, nil
}

// wrongKind is the error for a file of another kind than a command reads.
func wrongKind(path string, kind monitor.Kind, want string) error {
	name := path
	if path == stdinPath {
		name = stdinName
	}
	hint := ""
	switch kind {
	case monitor.KindStats:
		hint = "snapview summary reads it (--format torch: its memory_summary() table)"
	case monitor.KindStatsLog:
		hint = "snapview stats reads it (per step, and whether memory keeps climbing)"
	case monitor.KindSMI:
		hint = "snapview smi reads it, and snapview report SNAPSHOT --smi FILE sets it against a snapshot"
	case monitor.KindSnapshot:
		hint = "snapview summary, segments, state, leaks and report read it"
	}
	article := "a"
	if kind == monitor.KindSMI {
		article = "an"
	}
	return fmt.Errorf("%s: %s %s, not %s: %s", name, article, kind, want, hint)
}

// snapshotHint improves a load error of a snapshot command when the file
// is one of the monitoring files: it names what the file is and which
// command reads it.
func snapshotHint(path string, err error) error {
	if err == nil || path == stdinPath {
		return err
	}
	var fe *fileError
	if errors.As(err, &fe) {
		return err
	}
	switch kind, _ := sniffInput(path, nil); kind {
	case monitor.KindStats, monitor.KindStatsLog, monitor.KindSMI:
		return wrongKind(path, kind, "a memory snapshot")
	}
	return err
}

// parseZone reads --tz: an IANA zone name ("Europe/Berlin"), "UTC",
// "Local", or a fixed offset ("+02:00", "-0530", "UTC+2").
func parseZone(s string) (*time.Location, error) {
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
		return nil, usageErrorf("--tz %q: want a zone name (Europe/Berlin), UTC, Local or an offset (+02:00)", s)
	}
	return loc, nil
}
