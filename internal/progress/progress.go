// Package progress draws the progress lines snapview shows on a terminal's
// stderr while it works: the load bar ("loading NAME  42% [=====>  ]
// 82.0/195.2 MB 1.4 s") and the what-if's "simulating device 0: 3/10
// settings"; each redrawn in place with \r and cleared at the end, so that
// the command's own output starts on a clean line.
package progress

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
)

// Env names the environment variable that sets when progress is drawn:
// "auto" (the default) draws it when stderr is a terminal (the load bar
// once the load takes longer than Delay); "always" draws it on any stderr
// from the first byte (tests, or a terminal behind a pipe); "never" turns
// it off.
const Env = "SNAPVIEW_PROGRESS"

const (
	// Delay is how long a load runs before the bar appears in auto mode:
	// small files never show one.
	Delay = time.Second
	// every is the least time between two redraws.
	every      = 100 * time.Millisecond
	barWidth   = 30
	maxBarName = 24
)

// Wanted reads Env: on is true when progress may be drawn on w ("always",
// or w is a terminal and the variable is not "never"), always when it is
// drawn from the start.
func Wanted(w io.Writer) (on, always bool) {
	switch os.Getenv(Env) {
	case "always":
		return true, true
	case "never":
		return false, false
	}
	return IsTerminal(w), false
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// Bar draws "loading NAME  42% [=====>    ] 82.0/195.2 MB 1.4 s" on one
// line of w, redrawn in place with \r, and clears it at the end (Finish).
type Bar struct {
	w            io.Writer
	name         string
	total, done  int64
	start, drawn time.Time
	delay        time.Duration
	now          func() time.Time
	shown        bool
}

// NewBar returns the bar of loading the file at path of total bytes on w:
// drawn after Delay, or from the first byte when always is true. Its name
// is the file's base name, shortened to its last 24 characters.
func NewBar(w io.Writer, path string, total int64, always bool) *Bar {
	name := filepath.Base(path)
	if r := []rune(name); len(r) > maxBarName {
		name = "…" + string(r[len(r)-maxBarName+1:])
	}
	delay := Delay
	if always {
		delay = 0
	}
	return &Bar{w: w, name: name, total: total, start: time.Now(), delay: delay, now: time.Now}
}

// Add counts n more bytes read and redraws the bar when it is due.
func (b *Bar) Add(n int64) {
	b.done += n
	t := b.now()
	if t.Sub(b.start) < b.delay || (b.shown && t.Sub(b.drawn) < every && b.done < b.total) {
		return
	}
	b.drawn, b.shown = t, true
	fmt.Fprint(b.w, "\r"+b.line(t.Sub(b.start)))
}

// line is the bar's text after elapsed time d.
func (b *Bar) line(d time.Duration) string {
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

// Finish clears the bar's line if it was drawn.
func (b *Bar) Finish() {
	if b.shown {
		fmt.Fprint(b.w, "\r\033[K")
	}
}

// Reader reports the bytes read from a file to a Bar.
type Reader struct {
	F   *os.File
	Bar *Bar
}

func (p *Reader) Read(b []byte) (int, error) {
	n, err := p.F.Read(b)
	p.Bar.Add(int64(n))
	return n, err
}

// Stat is the file's, as for an *os.File: a decoder may size its buffers
// from it.
func (p *Reader) Stat() (os.FileInfo, error) { return p.F.Stat() }

// Sim draws "simulating device 0: 3/10 settings" on w when Wanted says so,
// and clears it at the end (Finish). Update is safe for concurrent use.
type Sim struct {
	mu    sync.Mutex
	w     io.Writer
	on    bool
	shown bool
}

// NewSim returns the what-if's progress line on w.
func NewSim(w io.Writer) *Sim {
	p := &Sim{w: w}
	p.on, _ = Wanted(w)
	return p
}

// Update says that done of total settings of device are simulated.
func (p *Sim) Update(device, done, total int) {
	if !p.on {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shown = true
	fmt.Fprintf(p.w, "\rsimulating device %d: %d/%d settings", device, done, total)
}

// Finish clears the line if it was drawn.
func (p *Sim) Finish() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
