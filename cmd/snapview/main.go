// Command snapview reads PyTorch CUDA memory snapshots and tells where the
// GPU memory went. See `snapview --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/internal/atomicfile"
	"github.com/snapview/snapview/report/kit"
)

func main() {
	room := setMemoryLimit()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(runMain(sigs, os.Stderr, func(ctx context.Context) error {
		return execute(withMemoryRoom(ctx, room), newRootCmd())
	}))
}

// graceStop is how long a command has to stop on its own after SIGINT or
// SIGTERM before the process exits anyway: any stage, the load included,
// ends within half a second.
const graceStop = 150 * time.Millisecond

// runMain runs cmd and returns the exit code. A signal on sigs cancels
// cmd's context, waits up to graceStop for it (no wait at a second
// signal), removes the temporary files of its outputs (see
// atomicfile.Write) and returns 128 plus the signal's number: 130 for
// SIGINT, 143 for SIGTERM. Errors are printed on stderr as one line,
// control characters escaped.
func runMain(sigs <-chan os.Signal, stderr io.Writer, cmd func(context.Context) error) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	outs := &atomicfile.Outputs{}
	ctx = atomicfile.WithOutputs(ctx, outs)
	done := make(chan error, 1)
	go func() { done <- cmd(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			fmt.Fprintf(stderr, "snapview: %s\n", kit.Escape(err.Error()))
			return exitCode(err)
		}
		return 0
	case sig := <-sigs:
		cancel(errInterrupted{sig})
		select {
		case <-done:
		case <-sigs:
		case <-time.After(graceStop):
		}
		outs.RemoveAll()
		fmt.Fprintf(stderr, "snapview: %v\n", errInterrupted{sig})
		return signalCode(sig)
	}
}

// signalCode is the shell's exit status for a process ended by sig.
func signalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
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
// everything else (unreadable or invalid snapshot, I/O failures). A
// builder below cmd says "usage" with an *analysis.UsageError.
func exitCode(err error) int {
	var u *usageError
	var au *analysis.UsageError
	if errors.As(err, &u) || errors.As(err, &au) {
		return 2
	}
	var e *exitStatus
	if errors.As(err, &e) {
		return e.code
	}
	return 1
}
