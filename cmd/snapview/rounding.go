package main

import (
	"context"

	"github.com/spf13/cobra"
)

// addRoundingFlag adds --rounding to root: cuda, npu or auto (the
// default), carried to the commands in their context and set on every
// snapshot they load (snapshot.Snapshot.ForceRounding), so that the replay
// of every view follows it. It runs after the PersistentPreRunE root
// already has.
func addRoundingFlag(root *cobra.Command) {
	var rounding string
	root.PersistentFlags().StringVar(&rounding, "rounding", "auto",
		"the allocator's rounding of a request to a block: cuda (round_size: multiples of 512 bytes), npu (torch_npu: round_up(request + 32, 512)) or auto (read from the file's blocks, else from its trace; info says from what)")
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if prev != nil {
			if err := prev(cmd, args); err != nil {
				return err
			}
		}
		switch rounding {
		case "auto", "":
			return nil
		case "cuda", "npu":
			cmd.SetContext(context.WithValue(cmd.Context(), roundingKey{}, rounding))
			return nil
		}
		return usageErrorf("--rounding %q: want cuda, npu or auto", rounding)
	}
}

type roundingKey struct{}

// roundingOf returns the rule --rounding forces ("cuda" or "npu"), "" for
// auto.
func roundingOf(ctx context.Context) string {
	r, _ := ctx.Value(roundingKey{}).(string)
	return r
}
