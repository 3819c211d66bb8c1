package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"

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
				return p.around(func() error { return run(cmd, args) })
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

// around runs f under the profiles asked for.
func (p *profileFlags) around(f func() error) (err error) {
	if p.cpu != "" {
		out, err := os.Create(p.cpu)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(out); err != nil {
			out.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() {
			pprof.StopCPUProfile()
			err = firstErr(err, wrapErr("--cpuprofile", out.Close()))
		}()
	}
	if p.mem != "" {
		defer func() {
			err = firstErr(err, wrapErr("--memprofile", writeHeapProfile(p.mem)))
		}()
	}
	return f()
}

// writeHeapProfile writes the heap profile after a garbage collection, as
// go test -memprofile does: alloc_space and alloc_objects cover the whole
// command (pprof -sample_index=alloc_space), inuse_space what is still
// reachable at its end.
func writeHeapProfile(path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(out, 0); err != nil {
		out.Close()
		return err
	}
	return out.Close()
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
