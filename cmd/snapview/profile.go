package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/pprof"

	"github.com/snapview/snapview/internal/atomicfile"
	"github.com/spf13/cobra"
)

// profileFlags are the hidden --cpuprofile and --memprofile flags of the
// root command: they profile whichever command runs, for `go tool pprof`.
type profileFlags struct {
	cpu, mem string
}

// addProfileFlags adds the hidden profiling flags to root and wraps the
// RunE of every command below it so that the profiles cover exactly the
// command's work and are written even when it fails. Call it after the
// commands were added.
func addProfileFlags(root *cobra.Command) {
	p := &profileFlags{}
	pf := root.PersistentFlags()
	pf.StringVar(&p.cpu, "cpuprofile", "", "write a CPU profile of the command to this file")
	pf.StringVar(&p.mem, "memprofile", "", "write a heap profile to this file when the command ends (pprof -sample_index=alloc_space: every allocation of the command)")
	_ = pf.MarkHidden("cpuprofile")
	_ = pf.MarkHidden("memprofile")
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				return p.around(cmd.Context(), func() error { return run(cmd, args) })
			}
		}
		for _, sub := range c.Commands() {
			wrap(sub)
		}
	}
	for _, c := range root.Commands() {
		wrap(c)
	}
}

// around runs f under the profiles asked for. The profiles are written
// as every output is (atomicfile.Write): whole or not at all.
func (p *profileFlags) around(ctx context.Context, f func() error) (err error) {
	if p.cpu != "" {
		var buf bytes.Buffer
		if err := pprof.StartCPUProfile(&buf); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			err = firstErr(err, wrapErr("--cpuprofile", atomicfile.Write(ctx, p.cpu, func(w io.Writer) error {
				_, err := w.Write(buf.Bytes())
				return err
			})))
		}()
	}
	if p.mem != "" {
		defer func() {
			err = firstErr(err, wrapErr("--memprofile", writeHeapProfile(ctx, p.mem)))
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
