package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// writeFileAtomic writes the file a command produces (report -o, the
// profiles, export -o) so that no reader ever sees half of it: write
// fills a temporary file in the target's directory, which is synced to
// disk and renamed over path. On any error, or when ctx is cancelled (a
// signal), the temporary file is removed and the old file at path, if
// any, stays as it was. The rename replaces path's own directory entry: a
// symbolic or hard link at path is replaced, the file it points to is
// left alone. A path that names something other than a regular file or a
// link (a terminal, /dev/null, a pipe) is written in place.
//
// Temporary files are registered with the command's outputs (see
// withOutputs), so that a signal that stops the command removes them.
func writeFileAtomic(ctx context.Context, path string, write func(w io.Writer) error) (err error) {
	if st, serr := os.Lstat(path); serr == nil {
		switch {
		case st.IsDir():
			return &fs.PathError{Op: "write", Path: path, Err: errors.New("is a directory")}
		case !st.Mode().IsRegular() && st.Mode()&fs.ModeSymlink == 0:
			return writeInPlace(path, write)
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return inPath(err, path)
	}
	outs := outputsOf(ctx)
	outs.add(tmp.Name())
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
		outs.done(tmp.Name())
	}()
	if err := write(tmp); err != nil {
		return inPath(err, path)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return inPath(err, path)
	}
	if err := tmp.Sync(); err != nil {
		return inPath(err, path)
	}
	if err := tmp.Close(); err != nil {
		return inPath(err, path)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return outs.rename(tmp.Name(), path)
}

// writeInPlace writes to a special file (a device, a pipe) as it is.
func writeInPlace(path string, write func(w io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return inPath(err, path)
	}
	return f.Close()
}

// inPath makes a write error name the target, not the temporary file.
func inPath(err error, path string) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: pe.Op, Path: path, Err: pe.Err}
	}
	return &fs.PathError{Op: "write", Path: path, Err: err}
}

// outputs are the temporary files of a running command. When a signal
// stops it, removeAll deletes them and no rename happens after.
type outputs struct {
	mu      sync.Mutex
	tmp     map[string]bool
	stopped bool
}

type outputsKey struct{}

// withOutputs returns a context that carries outs, for writeFileAtomic.
func withOutputs(ctx context.Context, outs *outputs) context.Context {
	return context.WithValue(ctx, outputsKey{}, outs)
}

// outputsOf returns the outputs ctx carries, or a fresh one (a test that
// runs a command without main).
func outputsOf(ctx context.Context) *outputs {
	if o, ok := ctx.Value(outputsKey{}).(*outputs); ok {
		return o
	}
	return &outputs{}
}

func (o *outputs) add(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tmp == nil {
		o.tmp = map[string]bool{}
	}
	o.tmp[name] = true
}

func (o *outputs) done(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.tmp, name)
}

// rename moves a finished temporary file over its target, unless the
// command was stopped.
func (o *outputs) rename(tmp, path string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		os.Remove(tmp)
		return context.Canceled
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// removeAll deletes every temporary file and stops later renames.
func (o *outputs) removeAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	for name := range o.tmp {
		os.Remove(name)
	}
	o.tmp = nil
}

// errInterrupted is the cause of a command stopped by a signal.
type errInterrupted struct{ sig os.Signal }

func (e errInterrupted) Error() string { return fmt.Sprintf("interrupted (%v)", e.sig) }
