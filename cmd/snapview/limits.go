package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

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
			n, err := parseSize(maxDecompressed)
			if err != nil {
				return usageErrorf("--max-decompressed %q: %v", maxDecompressed, err)
			}
			lim.MaxDecompressed = n
			if n == 0 {
				lim.MaxDecompressed = -1
			}
		}
		cmd.SetContext(withLimits(cmd.Context(), lim))
		return nil
	}
}

// parseSize reads a byte count: a number with an optional unit, B, KB, MB,
// GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(strings.ToLower(t), strings.ToLower(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	// !(f >= 0) refuses NaN, which every comparison lets through.
	if err != nil || !(f >= 0) || f*mult > 1<<62 {
		return 0, fmt.Errorf("want a size such as 8GiB or 500MB")
	}
	return int64(f * mult), nil
}
