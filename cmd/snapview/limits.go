package main

import (
	"github.com/spf13/cobra"

	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/snapshot"
)

// addLimitFlags adds --max-decompressed to root: the decoder's cap on what
// a compressed file may decompress to (see snapshot.Limits), carried to
// the commands in their context.
func addLimitFlags(root *cobra.Command) {
	var maxDecompressed string
	root.PersistentFlags().StringVar(&maxDecompressed, "max-decompressed", "",
		"most bytes a gzip or xz file may decompress to, e.g. 20GiB (0: no limit); by default 4GiB and at most 100 times the file's size past the first 16MiB")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		var lim snapshot.Limits
		if maxDecompressed != "" {
			n, err := units.ParseBytes(maxDecompressed)
			if err != nil {
				return usageErrorf("--max-decompressed %q: %v", maxDecompressed, err)
			}
			lim.MaxDecompressed = n
			if n == 0 {
				lim.MaxDecompressed = -1
			}
		}
		lim.MaxMemory = memoryRoomOf(cmd.Context()).decodedCap()
		cmd.SetContext(withLimits(cmd.Context(), lim))
		return nil
	}
}
