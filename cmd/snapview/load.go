package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/snapview/snapview/snapshot"
)

// progressEnv names the environment variable that sets when the load
// progress bar is drawn: "auto" (the default) draws it when stderr is a
// terminal and the load takes longer than progressDelay; "always" draws it
// on any stderr from the first byte (tests, or a terminal behind a pipe);
// "never" turns it off.
const progressEnv = "SNAPVIEW_PROGRESS"

const (
	// progressDelay is how long a load runs before the bar appears in auto
	// mode: small files never show one.
	progressDelay = time.Second
	// progressEvery is the least time between two redraws.
	progressEvery = 100 * time.Millisecond
	barWidth      = 30
	maxBarName    = 24
)

// loadSnapshot is snapshot.Load with a progress bar on errOut while the
// file is read, when errOut is a terminal and the load takes more than a
// second (see progressEnv). Errors are Load's: one line naming the file.
func loadSnapshot(ctx context.Context, errOut io.Writer, path string, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	delay := progressDelay
	bar := true
	switch os.Getenv(progressEnv) {
	case "always":
		delay = 0
	case "never":
		bar = false
	default:
		bar = isTerminal(errOut)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		// Directories, pipes and devices: Load says what is wrong, and a
		// bar needs a size.
		return snapshot.LoadLimits(path, lim)
	}
	if !bar {
		return decodeFile(path, &ctxReader{ctx: ctx, r: f}, lim)
	}
	name := filepath.Base(path)
	if r := []rune(name); len(r) > maxBarName {
		name = "…" + string(r[len(r)-maxBarName+1:])
	}
	pb := &progressBar{
		w: errOut, name: name, total: st.Size(),
		start: time.Now(), delay: delay, now: time.Now,
	}
	// TODO(snapshot): Decode does not get the file size that Load hands
	// its decoder to size the trace up front (the 2M-entry file then peaks
	// at 250 MB instead of 160 MB); progressReader has the file's Stat for
	// a Decode that looks for it.
	s, err := decodeFile(path, &ctxReader{ctx: ctx, r: &progressReader{f: f, bar: pb}}, lim)
	pb.finish()
	return s, err
}

// decodeFile decodes the snapshot r reads from the file at path; errors
// name the file. A load stopped by a signal returns ctx's error as it is.
func decodeFile(path string, r io.Reader, lim snapshot.Limits) (*snapshot.Snapshot, error) {
	s, err := snapshot.DecodeLimits(r, lim)
	if errors.Is(err, context.Canceled) {
		return nil, context.Canceled
	}
	if err != nil {
		var de *snapshot.DecodeError
		if errors.As(err, &de) {
			de.Path = path
			return nil, de
		}
		return nil, &snapshot.DecodeError{Path: path, Err: err}
	}
	return s, nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// progressReader reports the bytes read from a file to a progressBar.
type progressReader struct {
	f   *os.File
	bar *progressBar
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.f.Read(b)
	p.bar.add(int64(n))
	return n, err
}

// Stat is the file's, as for an *os.File: a decoder may size its buffers
// from it.
func (p *progressReader) Stat() (os.FileInfo, error) { return p.f.Stat() }

// progressBar draws "loading NAME  42% [=====>    ] 82.0/195.2 MB 1.4 s" on
// one line of w, redrawn in place with \r, and clears it at the end.
type progressBar struct {
	w            io.Writer
	name         string
	total, done  int64
	start, drawn time.Time
	delay        time.Duration
	now          func() time.Time
	shown        bool
}

func (b *progressBar) add(n int64) {
	b.done += n
	t := b.now()
	if t.Sub(b.start) < b.delay || (b.shown && t.Sub(b.drawn) < progressEvery && b.done < b.total) {
		return
	}
	b.drawn, b.shown = t, true
	fmt.Fprint(b.w, "\r"+b.line(t.Sub(b.start)))
}

// line is the bar's text after elapsed time d.
func (b *progressBar) line(d time.Duration) string {
	frac := 1.0
	if b.total > 0 {
		frac = min(float64(b.done)/float64(b.total), 1)
	}
	fill := int(frac * barWidth)
	bar := strings.Repeat("=", fill)
	if fill < barWidth {
		bar += ">" + strings.Repeat(" ", barWidth-fill-1)
	}
	const mb = 1e6
	return fmt.Sprintf("loading %s %3.0f%% [%s] %.1f/%.1f MB %.1f s",
		b.name, 100*frac, bar, float64(b.done)/mb, float64(b.total)/mb, d.Seconds())
}

// finish clears the bar's line if it was drawn, so that the command's own
// output starts on a clean line.
func (b *progressBar) finish() {
	if b.shown {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
