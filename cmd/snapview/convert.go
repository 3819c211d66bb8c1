package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/snapshot"
	"github.com/snapview/snapview/snapshot/dump"
)

// convertOptions are the flags of `snapview convert`.
type convertOptions struct {
	file     string
	protocol int
	format   string
	out      string
}

func newConvertCmd() *cobra.Command {
	opts := &convertOptions{}
	cmd := &cobra.Command{
		Use:     "convert FILE",
		Short:   "write a snapshot again as a protocol 4 pickle or as memory_viz's JSON",
		Long:    helpText("convert"),
		Example: helpText("convert.examples"),
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.file = args[0]
			if opts.out == "" {
				return usageErrorf("convert needs -o OUT: the file to write (- for standard output)")
			}
			switch {
			case opts.format != "pickle" && opts.format != "json":
				return usageErrorf("--format %q: want pickle or json", opts.format)
			case opts.protocol != 4:
				return usageErrorf("--protocol %d: convert writes protocol 4, which every pickle reader of Python 3.4 and later and memory_viz read", opts.protocol)
			case opts.format == "json" && cmd.Flags().Changed("protocol"):
				return usageErrorf("--protocol is for --format pickle: JSON has none")
			}
			return runConvert(cmd.Context(), opts, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.IntVar(&opts.protocol, "protocol", 4, "the pickle protocol to write (4)")
	f.StringVar(&opts.format, "format", "pickle", "pickle, or json: the JSON layout memory_viz accepts")
	f.StringVarP(&opts.out, "output", "o", "", "the file to write (required; - for standard output)")
	return cmd
}

func runConvert(ctx context.Context, opts *convertOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	return withSnapshotAs(ctx, stdin, stderr, opts.file, false, func(s *snapshot.Snapshot, _ source) error {
		printWarnings(stderr, s.Warnings)
		if len(s.Unknown) > 0 {
			fmt.Fprintf(stderr, "note: %d kinds of keys or values snapview does not read are left out (snapview info lists them)\n", len(s.Unknown))
		}
		write := dump.Writer(opts.format)
		return writeOutput(ctx, opts.out, stdout, func(w io.Writer) error { return write(w, s) })
	})
}
