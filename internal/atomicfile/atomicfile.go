// Package atomicfile writes the files a command produces (a report, a
// profile, an export) so that no reader ever sees half of one: a temporary
// file beside the target, synced and renamed over it, removed on an error
// or a signal (Outputs).
package atomicfile

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Write writes the file a command produces (report -o, the
// profiles, export -o) so that no reader ever sees half of it: write
// fills a temporary file in the target's directory, which is synced to
// disk and renamed over path. On any error, or when ctx is cancelled (a
// signal), the temporary file is removed and the old file at path, if
// any, stays as it was. A symbolic link at path is written through: the
// rename goes onto the regular file it points to, and the link stays (a
// hard link at path is replaced, the other names keep the old file). A
// path that is, or links to, something other than a regular file (a
// terminal, /dev/null, a pipe, /dev/stdout) is written in place. The file
// keeps the mode of the one it replaces; a new one gets 0666 less the
// umask, as a shell's redirection gives it.
//
// Temporary files are registered with the command's Outputs (see
// WithOutputs), so that a signal that stops the command removes them. The
// errors name path (*fs.PathError; os.Rename's *os.LinkError), or are
// ctx's: context.Canceled also when Outputs.RemoveAll ran first.
func Write(ctx context.Context, path string, write func(w io.Writer) error) (err error) {
	// A symbolic link is written through: to a special file (/dev/stdout)
	// in place, to a regular file by renaming onto its target, so the
	// link stays.
	mode := fs.FileMode(0o666) &^ umask()
	if st, serr := os.Stat(path); serr == nil {
		switch {
		case st.IsDir():
			return &fs.PathError{Op: "write", Path: path, Err: errors.New("is a directory")}
		case !st.Mode().IsRegular():
			return writeInPlace(path, write)
		}
		mode = st.Mode().Perm()
		if target, lerr := filepath.EvalSymlinks(path); lerr == nil {
			if strings.HasPrefix(target, "/proc/") || strings.HasPrefix(target, "/dev/") {
				// /dev/stdout redirected to a file: write to the
				// descriptor the caller gave, not a new file.
				return writeInPlace(path, write)
			}
			path = target
		}
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	pattern := "." + base + ".*.tmp"
	if len(pattern) > 200 {
		// A name near the 255-byte limit leaves no room for the
		// temporary name's additions.
		pattern = ".snapview-*.tmp"
	}
	tmp, err := os.CreateTemp(dir, pattern)
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
	if err := tmp.Chmod(mode); err != nil {
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

// umask returns the process's file mode creation mask, read from
// /proc/self/status (Linux 4.7 and later; 022 where it cannot be read),
// so that a new output gets the mode a shell's redirection would give it.
func umask() fs.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Umask:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return fs.FileMode(n) & 0o777
				}
			}
		}
	}
	return 0o022
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

// Outputs are the temporary files of a running command. When a signal
// stops it, RemoveAll deletes them and no rename happens after.
type Outputs struct {
	mu      sync.Mutex
	tmp     map[string]bool
	stopped bool
}

type outputsKey struct{}

// WithOutputs returns a context that carries outs, for Write.
func WithOutputs(ctx context.Context, outs *Outputs) context.Context {
	return context.WithValue(ctx, outputsKey{}, outs)
}

// outputsOf returns the Outputs ctx carries, or a fresh one (a test that
// runs a command without main).
func outputsOf(ctx context.Context) *Outputs {
	if o, ok := ctx.Value(outputsKey{}).(*Outputs); ok {
		return o
	}
	return &Outputs{}
}

func (o *Outputs) add(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tmp == nil {
		o.tmp = map[string]bool{}
	}
	o.tmp[name] = true
}

func (o *Outputs) done(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.tmp, name)
}

// rename moves a finished temporary file over its target, unless the
// command was stopped.
func (o *Outputs) rename(tmp, path string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		os.Remove(tmp)
		return context.Canceled
	}
	if err := os.Rename(tmp, path); err != nil {
		os.RemoveAll(tmp)
		return err
	}
	return nil
}

// RemoveAll deletes every temporary file (and folder: a set being
// written, WriteSet) and stops later renames.
func (o *Outputs) RemoveAll() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	for name := range o.tmp {
		os.RemoveAll(name)
	}
	o.tmp = nil
}
