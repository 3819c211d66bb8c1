// Package selfprofile profiles snapview's own run for `go tool pprof`:
// the CPU profile of a command and the heap profile at its end (the
// hidden --cpuprofile and --memprofile flags). Each profile is written as
// every output is, through internal/atomicfile: whole or not at all.
package selfprofile

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"

	"github.com/snapview/snapview/internal/atomicfile"
)

// Paths are the files the profiles go to; "" leaves a profile out.
type Paths struct {
	CPU, Mem string
}

// Run runs f under the profiles p asks for and writes them when f
// returns, also when it fails. f's error wins over a profile's; a profile
// that cannot be written is an error naming its flag ("--cpuprofile: …").
func (p Paths) Run(ctx context.Context, f func() error) (err error) {
	if p.CPU != "" {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			err = firstErr(err, wrapErr("--cpuprofile", atomicfile.Write(ctx, p.CPU, func(w io.Writer) error {
				_, err := w.Write(buf.Bytes())
				return err
			})))
		}()
	}
	if p.Mem != "" {
		defer func() {
			err = firstErr(err, wrapErr("--memprofile", writeHeapProfile(ctx, p.Mem)))
		}()
	}
	return f()
}

// writeHeapProfile writes the heap profile after a garbage collection, as
// go test -memprofile does: alloc_space and alloc_objects cover the whole
// command (pprof -sample_index=alloc_space), inuse_space what is still
// reachable at its end.
func writeHeapProfile(ctx context.Context, path string) error {
	runtime.GC()
	return atomicfile.Write(ctx, path, func(w io.Writer) error {
		return pprof.Lookup("allocs").WriteTo(w, 0)
	})
}

func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}

// firstErr returns a, or b when a is nil: the command's own error wins, and
// the message stays one line.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
