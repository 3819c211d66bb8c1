package snapshot

import (
	"fmt"
	"io"

	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot/pickle"
)

// Limits bound what decoding one file may cost, so that a small hostile
// file (a decompression bomb, a memo reference repeated a million times, a
// string of gigabytes, a stack that never closes) ends in a one-line error
// instead of running out of memory. They scale with the input: what the
// decoder builds may grow with the bytes it has read, not with what the
// file claims.
//
// The zero value of a field means its default (see DefaultLimits).
type Limits struct {
	// MaxDecompressed is the most bytes a compressed file may decompress to.
	// When it is 0, the default applies: the decompressed stream may not
	// pass DefaultMaxDecompressed, nor RatioFloor bytes plus
	// DefaultMaxRatio times the compressed bytes read so far (a genuine snapshot compresses 5 to
	// 30 times; a bomb a thousand times or more). A positive value replaces
	// both checks with this one cap; -1 turns the check off.
	MaxDecompressed int64

	// MaxString is the longest string (or bytes value) in bytes; 0: the
	// default, DefaultMaxString.
	MaxString int64

	// MaxStack is the most values and marks on the pickle machine's stack
	// (PyTorch's pickler appends in batches of 1000, so a genuine file
	// needs a few thousand); 0: the default, DefaultMaxStack.
	MaxStack int

	// ObjectBudget is the bytes of decoded objects (trace entries, blocks,
	// dict and list items, memo slots, settings text) the decoder may build
	// beyond BudgetPerByte times the decoded stream's size; 0: the default,
	// DefaultObjectBudget. A shared dict or list costs again each time it
	// is expanded, so a memoized object referenced a million times costs
	// a million times.
	ObjectBudget int64

	// MaxMemory caps the decoded-object budget whatever the stream's size
	// (bytes; 0: no cap): what the process can afford to build, which
	// snapview works out from the memory it may use (ulimit -v, the
	// cgroup's memory.max). Passing it is the "memory" limit's error.
	MaxMemory int64

	// genericOnly turns the decoder's fast path for trace entries off
	// (the pickle machine's batch reader, snapshot/pickle/fast.go), for
	// tests that compare the two paths.
	genericOnly bool
}

// Defaults of Limits.
const (
	DefaultMaxDecompressed = 4 << 30
	DefaultMaxRatio        = 100
	RatioFloor             = 16 << 20
	DefaultMaxString       = 64 << 20
	DefaultMaxStack        = 1 << 20
	DefaultObjectBudget    = 64 << 20
	// BudgetPerByte is how many bytes of decoded objects each byte of the
	// decoded stream may pay for: the 2M-entry benchmark file builds about
	// 3.5 bytes of objects per byte of pickle.
	BudgetPerByte = pickle.BudgetPerByte
)

// DefaultLimits returns the limits Load and Decode use.
func DefaultLimits() Limits {
	return Limits{}.withDefaults()
}

func (l Limits) withDefaults() Limits {
	if l.MaxString == 0 {
		l.MaxString = DefaultMaxString
	}
	if l.MaxStack == 0 {
		l.MaxStack = DefaultMaxStack
	}
	if l.ObjectBudget == 0 {
		l.ObjectBudget = DefaultObjectBudget
	}
	return l
}

// LimitError is the error for a file that passes one of the Limits. It is
// wrapped in a *DecodeError naming the file.
type LimitError = pickle.LimitError

// newBudget is the decoded-object budget of lim, read reporting the
// decoded stream's bytes so far.
func newBudget(l Limits, read func() int64) *pickle.Budget {
	b := pickle.NewBudget(l.ObjectBudget, read)
	b.Cap(l.MaxMemory)
	return b
}

// limitReader stops a decompressor whose output passes the limits: the
// absolute cap, or the ratio to the compressed bytes read (raw).
type limitReader struct {
	r     io.Reader
	n     int64
	raw   func() int64
	max   int64 // 0: none
	ratio int64 // 0: none
	what  string
}

func newLimitReader(r io.Reader, raw func() int64, l Limits, what string) io.Reader {
	lr := &limitReader{r: r, raw: raw, what: what}
	switch {
	case l.MaxDecompressed < 0:
		return r
	case l.MaxDecompressed > 0:
		lr.max = l.MaxDecompressed
	default:
		lr.max, lr.ratio = DefaultMaxDecompressed, DefaultMaxRatio
	}
	return lr
}

func (l *limitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.max > 0 && l.n > l.max {
		hint := "if the file is genuine, raise it with --max-decompressed"
		return n, &LimitError{Limit: "decompressed size",
			Detail: fmt.Sprintf("the %s data decompresses to more than %s", l.what, units.Bytes(l.max)), Hint: hint}
	}
	if l.ratio > 0 && l.n > RatioFloor+l.ratio*l.raw() {
		return n, &LimitError{Limit: "decompressed size",
			Detail: fmt.Sprintf("the %s data decompresses to over %s from %s of file, more than %d times (a decompression bomb?)",
				l.what, units.Bytes(l.n), units.Bytes(l.raw()), l.ratio),
			Hint: "if the file is genuine, raise the limit with --max-decompressed"}
	}
	return n, err
}
