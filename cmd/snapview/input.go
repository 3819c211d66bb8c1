package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/progress"
	"github.com/snapview/snapview/snapshot"
)

const (
	// stdinPath is the FILE argument that reads the snapshot from standard
	// input.
	stdinPath = "-"
	// stdinName names standard input in messages and reports.
	stdinName = "<stdin>"
)

// source is where a loaded snapshot came from.
type source struct {
	// name is the file as messages and reports name it: the path as
	// given, or "<stdin>".
	name string
	// size is the number of bytes read (the size on disk, compressed if
	// the file is); 0 when unknown.
	size int64
}

// withSnapshotCtx loads the snapshot at path ("-": from stdin) and runs f
// on it. It is the one place that makes the errors met after a successful
// load name the file, as the load's own errors do: f's error comes back as
// "NAME: fault" (see inFile), a usage error still one (exit code 2). The
// load stops when ctx is cancelled (a signal), and the decoder's limits are
// those of ctx (the --max-decompressed flag, see limitsOf). Every command
// that reads a snapshot goes through here.
func withSnapshotCtx(ctx context.Context, stdin io.Reader, errOut io.Writer, path string, f func(s *snapshot.Snapshot, src source) error) error {
	return withSnapshotAs(ctx, stdin, errOut, path, true, f)
}

// withSnapshotAs is withSnapshotCtx; with complete false f gets the
// snapshot as the file holds it (convert writes it back as it is).
func withSnapshotAs(ctx context.Context, stdin io.Reader, errOut io.Writer, path string, complete bool, f func(s *snapshot.Snapshot, src source) error) error {
	lim := limitsOf(ctx)
	var (
		s   *snapshot.Snapshot
		src = source{name: path}
		err error
	)
	if path == stdinPath {
		src.name = stdinName
		s, src.size, err = loadStdin(ctx, stdin, lim)
	} else {
		s, err = loadSnapshot(ctx, errOut, path, lim)
		if st, serr := os.Stat(path); err == nil && serr == nil {
			src.size = st.Size()
		}
	}
	if err != nil {
		return snapshotHint(path, err)
	}
	// --rounding, then what other producers leave out (inactive blocks,
	// segments) put back once, here, so that every command sees the same
	// state (convert writes the file as decoded).
	s.ForceRounding = roundingOf(ctx)
	if complete {
		s, _ = replay.Complete(s)
	}
	return inFile(src.name, f(s, src))
}

// loadStdin decodes a snapshot from r, standard input, and returns it with
// the number of bytes read (snapshot.DecodeNamed). Errors name "<stdin>".
// A terminal on r is a usage error: the command would wait for a snapshot
// typed in.
func loadStdin(ctx context.Context, r io.Reader, lim snapshot.Limits) (*snapshot.Snapshot, int64, error) {
	if f, ok := r.(*os.File); ok && progress.IsTerminal(f) {
		return nil, 0, usageErrorf("%s: standard input is a terminal: redirect a snapshot into it (snapview summary - < snap.pickle)", stdinPath)
	}
	return snapshot.DecodeNamed(ctx, stdinName, r, lim)
}

type limitsKey struct{}

// withLimits returns a context that carries the decoder's limits.
func withLimits(ctx context.Context, lim snapshot.Limits) context.Context {
	return context.WithValue(ctx, limitsKey{}, lim)
}

// limitsOf returns the decoder's limits ctx carries, or the defaults.
func limitsOf(ctx context.Context) snapshot.Limits {
	if l, ok := ctx.Value(limitsKey{}).(snapshot.Limits); ok {
		return l
	}
	return snapshot.Limits{}
}

// inFile makes err, met after the file name was loaded, name it: "NAME:
// fault" on one line. Errors that name a file of their own (an
// *fs.PathError, such as a failed write of report --output or of stdout;
// a *snapshot.DecodeError) and cancellation are returned as they are.
func inFile(name string, err error) error {
	var (
		pe *fs.PathError
		de *snapshot.DecodeError
	)
	switch {
	case err == nil, errors.As(err, &pe), errors.As(err, &de),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return &fileError{name: name, err: err}
}

// fileError is an error about the snapshot file name.
type fileError struct {
	name string
	err  error
}

func (e *fileError) Error() string { return e.name + ": " + e.err.Error() }
func (e *fileError) Unwrap() error { return e.err }
