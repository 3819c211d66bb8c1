package main

import (
	"github.com/snapview/snapview/internal/selfprofile"
	"github.com/spf13/cobra"
)

// addProfileFlags adds the hidden --cpuprofile and --memprofile flags to
// root and wraps the RunE of every command below it so that the profiles
// (selfprofile.Paths.Run) cover exactly the command's work and are written
// even when it fails. Call it after the commands were added.
func addProfileFlags(root *cobra.Command) {
	p := &selfprofile.Paths{}
	pf := root.PersistentFlags()
	pf.StringVar(&p.CPU, "cpuprofile", "", "write a CPU profile of the command to this file")
	pf.StringVar(&p.Mem, "memprofile", "", "write a heap profile to this file when the command ends (pprof -sample_index=alloc_space: every allocation of the command)")
	_ = pf.MarkHidden("cpuprofile")
	_ = pf.MarkHidden("memprofile")
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		if run := c.RunE; run != nil {
			c.RunE = func(cmd *cobra.Command, args []string) error {
				return p.Run(cmd.Context(), func() error { return run(cmd, args) })
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
