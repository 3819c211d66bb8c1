// Command snapview reads PyTorch CUDA memory snapshots and tells where the
// GPU memory went. See `snapview --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := execute(ctx, newRootCmd())
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "snapview: %v\n", err)
		os.Exit(exitCode(err))
	}
}

// usageError marks a mistake in the command line (exit code 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitCode maps an error to the process exit code: 2 for usage errors (a
// mistake in the command line, or a question the file cannot answer: a
// device, a trace entry, an OOM or timestamps it does not have), 1 for
// everything else (unreadable or invalid snapshot, I/O failures).
func exitCode(err error) int {
	var u *usageError
	if errors.As(err, &u) {
		return 2
	}
	return 1
}
