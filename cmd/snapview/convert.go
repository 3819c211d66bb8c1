package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/snapview/snapview/report/kit"
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
		Use:   "convert FILE",
		Short: "write a snapshot again as a protocol 4 pickle or as memory_viz's JSON",
		Long: `convert writes the snapshot in FILE again, as a pickle of protocol 4 (what
torch.cuda.memory._dump_snapshot() writes under Python 3.8 to 3.13), or with
--format json in the JSON layout memory_viz accepts. Use it for a file that
other tools cannot open: a protocol 5 pickle (Python 3.14's default, which
memory_viz refuses), a gzip or xz compressed file, a JSON file a pickle
reader needs.

FILE is read as every command reads it (pickle of protocols 2 to 5, JSON,
gzip, xz; - for standard input). What snapview's decoder keeps is written,
with the keys PyTorch 2.11 writes: segments with their blocks and frames,
device_traces, allocator_settings and external_annotations. PyTorch 2.0's
block history is written in 2.11's layout (requested_size and frames of the
newest entry); keys snapview does not read (FX fields, keys of newer
PyTorch) are left out, and info lists them. -o - writes to standard output.
The output is written whole or not at all.`,
		Example: `  snapview convert --protocol 4 -o run_p4.pickle run_py314.pickle
  snapview convert --format json -o run.json run.pickle.gz`,
		Args: exactArgs(1),
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
		for _, w := range s.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", kit.Escape(w))
		}
		if len(s.Unknown) > 0 {
			fmt.Fprintf(stderr, "note: %d kinds of keys or values snapview does not read are left out (snapview info lists them)\n", len(s.Unknown))
		}
		write := dump.Pickle
		if opts.format == "json" {
			write = dump.JSON
		}
		return writeOutput(ctx, opts.out, stdout, func(w io.Writer) error { return write(w, s) })
	})
}
