package kit

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"github.com/snapview/snapview/internal/units"
)

// WarnFoldKeep is how many devices' copies of one kind of warning reach
// stderr in full; the others are counted and named in one line at the end.
const WarnFoldKeep = 3

// deviceInWarning finds the device a warning line is about: "warning:
// device 3: ...", "warning: NAME: device 3: ..." or "warning: device 3
// skipped: ...".
var deviceInWarning = regexp.MustCompile(`^warning: (?:.*?: )?device (\d+)[: ]`)

// numbersInWarning are the figures a warning's kind leaves out (decimal and
// hexadecimal numbers), so that the same warning about other entries or
// addresses on another device is the same kind.
var numbersInWarning = regexp.MustCompile(`0x[0-9a-fA-F]+|\d+`)

// WarnFold is the stderr of a command: it passes every line through as it
// comes, except that of the warnings about one device (a line naming
// "device N", with its indented "warning:   ..." continuation lines), only
// the first WarnFoldKeep devices' copies of each kind are written; the
// rest are counted, and Flush writes one line per kind naming how many
// devices and the first few. A file of 100,000 devices that all warn the
// same thus writes a handful of lines, not 100,000.
type WarnFold struct {
	w       io.Writer
	partial []byte
	kinds   map[string]*warnKind
	order   []*warnKind
	// dropping is true while the continuation lines of a dropped warning
	// follow.
	dropping bool
}

type warnKind struct {
	first   int // the device of the first copy written
	kept    int
	dropped []int
}

// NewWarnFold returns a WarnFold that writes to w; call Flush at the end.
func NewWarnFold(w io.Writer) *WarnFold {
	return &WarnFold{w: w, kinds: map[string]*warnKind{}}
}

// Write implements io.Writer; it writes whole lines on, keeping a partial
// last line until its newline (or Flush) comes.
func (f *WarnFold) Write(p []byte) (int, error) {
	f.partial = append(f.partial, p...)
	for {
		i := bytes.IndexByte(f.partial, '\n')
		if i < 0 {
			break
		}
		line := f.partial[:i+1]
		if err := f.line(line); err != nil {
			return len(p), err
		}
		f.partial = f.partial[i+1:]
	}
	return len(p), nil
}

func (f *WarnFold) line(line []byte) error {
	if bytes.HasPrefix(line, []byte("warning:   ")) {
		if f.dropping {
			return nil
		}
		_, err := f.w.Write(line)
		return err
	}
	f.dropping = false
	m := deviceInWarning.FindSubmatchIndex(line)
	if m == nil {
		_, err := f.w.Write(line)
		return err
	}
	dev, _ := strconv.Atoi(string(line[m[2]:m[3]]))
	key := string(line[:m[2]]) + "#" + numbersInWarning.ReplaceAllString(string(line[m[3]:]), "#")
	k := f.kinds[key]
	if k == nil {
		k = &warnKind{first: dev}
		f.kinds[key] = k
		f.order = append(f.order, k)
	}
	if k.kept < WarnFoldKeep {
		k.kept++
		_, err := f.w.Write(line)
		return err
	}
	k.dropped = append(k.dropped, dev)
	f.dropping = true
	return nil
}

// Flush writes a partial last line and, for each kind of device warning
// with copies left out, one line: how many more devices and which.
func (f *WarnFold) Flush() error {
	open := false // a last line without its newline was written
	if len(f.partial) > 0 {
		line := f.partial
		f.partial = nil
		if err := f.line(line); err != nil {
			return err
		}
		open = !f.dropping
	}
	for _, k := range f.order {
		if len(k.dropped) == 0 {
			continue
		}
		if open {
			if _, err := io.WriteString(f.w, "\n"); err != nil {
				return err
			}
			open = false
		}
		noun := "devices"
		if len(k.dropped) == 1 {
			noun = "device"
		}
		if _, err := fmt.Fprintf(f.w, "warning: the same as device %d's warning above for %s more %s: %s\n",
			k.first, units.Int(len(k.dropped)), noun, units.IntList(k.dropped)); err != nil {
			return err
		}
		k.dropped = nil
	}
	return nil
}
