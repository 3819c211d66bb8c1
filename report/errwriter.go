package report

import (
	"fmt"
	"io"
)

// errWriter is a writer with a sticky error, for runs of Fprintf.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
