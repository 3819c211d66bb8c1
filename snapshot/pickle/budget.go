package pickle

import (
	"fmt"

	"github.com/snapview/snapview/internal/units"
)

// LimitError is the error for input that passes one of the limits a
// reader of untrusted data sets (the machine's MaxString, MaxStack and
// Budget, and those of its callers).
type LimitError struct {
	// Limit names the limit: "decompressed size", "string length",
	// "stack depth", "decoded-object budget".
	Limit string
	// Detail says what passed it, in a user's words.
	Detail string
	// Hint says how to lift it, when it can be ("" if not).
	Hint string
}

func (e *LimitError) Error() string {
	s := "over the " + e.Limit + " limit: " + e.Detail
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// BudgetPerByte is how many bytes of decoded objects each byte of the
// decoded stream may pay for (see Budget): the 2M-entry benchmark
// snapshot builds about 3.5 bytes of objects per byte of pickle.
const BudgetPerByte = 8

// Budget counts the bytes of objects a decoder builds against what the
// stream read so far allows: Base plus BudgetPerByte bytes per byte read.
// A shared object costs again each time it is expanded, so a memoized
// object referenced a million times costs a million times.
type Budget struct {
	spent int64
	base  int64
	max   int64 // Cap's; 0: none
	// Read returns the decoded stream's bytes read so far.
	Read func() int64
	// Err is the *LimitError once the budget is spent (and stays).
	Err error
}

// NewBudget returns a budget of base bytes beyond BudgetPerByte per byte
// that read reports.
func NewBudget(base int64, read func() int64) *Budget {
	return &Budget{base: base, Read: read}
}

// Cap caps the budget at max bytes whatever the stream's size (0: no
// cap): what the process can afford to build. Passing it is the "memory"
// limit's *LimitError.
func (b *Budget) Cap(max int64) {
	b.max = max
	if max > 0 {
		b.base = min(b.base, max)
	}
}

// Spend charges n bytes and reports false once the budget is spent (the
// error is then b.Err, and stays).
func (b *Budget) Spend(n int64) bool {
	b.spent += n
	if b.spent <= b.base {
		return b.Err == nil
	}
	return b.check()
}

func (b *Budget) check() bool {
	if b.Err != nil {
		return false
	}
	read := b.Read()
	if b.spent <= b.base+BudgetPerByte*read && (b.max <= 0 || b.spent <= b.max) {
		return true
	}
	if b.max > 0 && b.spent > b.max {
		b.Err = &LimitError{
			Limit: "memory",
			Detail: fmt.Sprintf("%s of decoded objects from %s of data, more than the %s this process can hold for them",
				units.Bytes(b.spent), units.Bytes(read), units.Bytes(b.max)),
			Hint: "its memory is capped (ulimit -v or the cgroup's memory.max): raise the cap to read this file",
		}
		return false
	}
	b.Err = &LimitError{
		Limit: "decoded-object budget",
		Detail: fmt.Sprintf("%s of decoded objects from %s of data, more than %s plus %d bytes per byte read (a shared object referenced over and over, or a memo spread thin?)",
			units.Bytes(b.spent), units.Bytes(read), units.Bytes(b.base), BudgetPerByte),
	}
	return false
}
