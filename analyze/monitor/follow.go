package monitor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// FollowMaxLine is the longest line a [Follower] keeps (bytes): a
// memory_stats() record is about 5 KB, an nvidia-smi row under 1 KB. A
// longer line is dropped with a warning, and reading goes on after its
// newline.
const FollowMaxLine = 1 << 20

// Follower reads the complete lines appended to a log that is still being
// written, as tail -f does: each [Follower.Poll] returns the lines whose
// newline has arrived since the last call; a partial last line waits for
// its newline. A file that was rotated (its path now names another file)
// or truncated (it shrank) is read again from its start, with a warning.
// A Follower of a pipe or standard input reads it in the background.
type Follower struct {
	path string
	f    *os.File
	info os.FileInfo // the open file's, to tell a rotation (os.SameFile)
	off  int64
	part []byte // the partial last line read so far
	skip bool   // dropping an over-long line up to its newline

	lines chan []byte // pipe mode: lines read in the background
	errc  chan error
	eof   bool
}

// FollowFile returns a Follower of the file at path, reading from its
// start. The error is os.Open's.
func FollowFile(path string) (*Follower, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &Follower{path: path, f: f, info: info}, nil
}

// FollowReader returns a Follower of r, a pipe: a goroutine reads it
// until it ends or fails. Reading stops at r's end; [Follower.Done] says
// so.
func FollowReader(r io.Reader) *Follower {
	fl := &Follower{lines: make(chan []byte, 1024), errc: make(chan error, 1)}
	go func() {
		buf := make([]byte, 64<<10)
		var part []byte
		skip := false
		for {
			n, err := r.Read(buf)
			var lines [][]byte
			var warn []string
			lines, part, skip, warn = splitLines(part, buf[:n], skip)
			for _, w := range warn {
				fl.lines <- []byte("\x00" + w)
			}
			for _, l := range lines {
				fl.lines <- l
			}
			if err != nil {
				if len(bytes.TrimSpace(part)) > 0 && !skip {
					fl.lines <- part
				}
				if errors.Is(err, io.EOF) {
					err = nil
				}
				fl.errc <- err
				close(fl.lines)
				return
			}
		}
	}()
	return fl
}

// splitLines appends data to the partial line part and returns the
// complete lines (without their newline), what is left of the last line,
// and warnings for lines longer than FollowMaxLine (dropped; skip says
// the rest of one is still to come).
func splitLines(part, data []byte, skip bool) (lines [][]byte, rest []byte, skipping bool, warn []string) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if !skip {
				part = append(part, data...)
				if len(part) > FollowMaxLine {
					warn = append(warn, fmt.Sprintf("a line longer than %d bytes was left out", FollowMaxLine))
					part, skip = part[:0], true
				}
			}
			break
		}
		if !skip {
			line := append(part, data[:i]...)
			if len(line) > FollowMaxLine {
				warn = append(warn, fmt.Sprintf("a line longer than %d bytes was left out", FollowMaxLine))
			} else {
				lines = append(lines, bytes.Clone(line))
			}
		}
		part, skip = part[:0], false
		data = data[i+1:]
	}
	return lines, part, skip, warn
}

// Batch is what one [Follower.Poll] read.
type Batch struct {
	// Lines are the complete lines that arrived, without their newline.
	Lines [][]byte
	// Restart is the index in Lines of the first line of the file read
	// again from its start: it was truncated, or a new file took its
	// path (Rotated). -1 when the file did not start again.
	Restart int
	Rotated bool
	// Warnings say what was tolerated: a rotated or truncated file, an
	// over-long line.
	Warnings []string
}

// Poll returns the complete lines that arrived since the last call, and
// where the file started again. An error is a failure to read (the
// file's own, or the pipe's); a file that is missing for a moment (being
// rotated) is no error.
func (fl *Follower) Poll() (b Batch, err error) {
	b.Restart = -1
	if fl.lines != nil {
		for {
			select {
			case l, ok := <-fl.lines:
				if !ok {
					fl.eof = true
					return b, <-fl.errc
				}
				if len(l) > 0 && l[0] == 0 {
					b.Warnings = append(b.Warnings, string(l[1:]))
					continue
				}
				b.Lines = append(b.Lines, l)
			default:
				return b, nil
			}
		}
	}
	if st, serr := os.Stat(fl.path); serr == nil {
		switch {
		case !os.SameFile(st, fl.info):
			// Rotated: finish the old file, then read the new one from
			// its start.
			if err = fl.readAppended(&b); err != nil {
				return b, err
			}
			nf, oerr := os.Open(fl.path)
			if oerr != nil {
				return b, nil
			}
			info, oerr := nf.Stat()
			if oerr != nil {
				nf.Close()
				return b, nil
			}
			fl.f.Close()
			fl.f, fl.info, fl.off, fl.part, fl.skip = nf, info, 0, nil, false
			b.Restart, b.Rotated = len(b.Lines), true
			b.Warnings = append(b.Warnings, "the log was rotated: reading the new file from its start")
		case st.Size() < fl.off:
			fl.off, fl.part, fl.skip = 0, nil, false
			b.Restart = len(b.Lines)
			b.Warnings = append(b.Warnings, "the log shrank (truncated): reading it again from its start")
		}
	}
	return b, fl.readAppended(&b)
}

// readAppended reads fl.f from fl.off to its end into b.
func (fl *Follower) readAppended(b *Batch) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := fl.f.ReadAt(buf, fl.off)
		fl.off += int64(n)
		var got [][]byte
		var warn []string
		got, fl.part, fl.skip, warn = splitLines(fl.part, buf[:n], fl.skip)
		b.Lines = append(b.Lines, got...)
		b.Warnings = append(b.Warnings, warn...)
		if errors.Is(err, io.EOF) || (err == nil && n == 0) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// IsPipe reports whether fl reads a pipe (or standard input) rather than
// a file.
func (fl *Follower) IsPipe() bool { return fl.lines != nil }

// Done reports whether a pipe's Follower has read to the pipe's end
// (always false for a file, which may grow again).
func (fl *Follower) Done() bool { return fl.eof }

// Close closes the file followed.
func (fl *Follower) Close() error {
	if fl.f != nil {
		return fl.f.Close()
	}
	return nil
}
