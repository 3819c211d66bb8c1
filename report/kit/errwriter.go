package kit

import (
	"fmt"
	"io"
)

// ErrWriter is a writer with a sticky error, for runs of Fprintf.
type ErrWriter struct {
	W   io.Writer
	Err error
}

// Printf writes as fmt.Fprintf does, unless an earlier write failed; the
// first error stays in Err.
func (e *ErrWriter) Printf(format string, args ...any) {
	if e.Err == nil {
		_, e.Err = fmt.Fprintf(e.W, format, args...)
	}
}
