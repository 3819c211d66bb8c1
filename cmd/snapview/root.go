package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "snapview",
		Short: "read PyTorch CUDA memory snapshots offline and tell where the GPU memory went",
		Long: `snapview reads the memory snapshots PyTorch writes
(torch.cuda.memory._dump_snapshot() pickles, torch.cuda.memory_snapshot()
lists, the same data as JSON, gzip- or xz-compressed) and tells where the GPU
memory went: memory_summary() tables, segments and blocks, leaks grouped by
allocation stack, the state at the peak or at an OOM, and an HTML timeline.

It needs no GPU, no PyTorch and no network.

Record a snapshot in your PyTorch program with:

    torch.cuda.memory._record_memory_history(max_entries=100000)
    ... run your steps ...
    torch.cuda.memory._dump_snapshot("snap.pickle")

FILE is the snapshot's path, or - to read it from standard input
(snapview summary - < snap.pickle); messages then call it <stdin>.

Exit status: 0 on success (an empty snapshot included), 1 when the file
cannot be read or is not a snapshot, 2 for a mistake in the command line or
a question the file cannot answer (a device, an entry or an OOM it does not
have), 130 after Ctrl-C (SIGINT) and 143 after SIGTERM: any command stops
within half a second, at any stage, and leaves no partial output file
(files are written to a temporary name and renamed when whole).

Hostile or broken files end in a one-line error, never in an out-of-memory
crash: the decoder's budgets grow with the file's size. A gzip or xz file
may decompress to at most 4GiB, and to at most 100 times its own size past
the first 16MiB (a genuine snapshot compresses 5 to 30 times); raise the
cap with --max-decompressed for a genuine file that passes it.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err}
	})
	root.AddCommand(
		// Each command lives in its own file as newXxxCmd().
		newReportCmd(),
		newSummaryCmd(),
		newSegmentsCmd(),
		newStateCmd(),
		newInfoCmd(),
		newLeaksCmd(),
	)
	addProfileFlags(root)
	addLimitFlags(root)
	return root
}

// exactArgs is cobra.ExactArgs that returns a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// execute runs root and returns its error. cobra's "unknown command" error
// comes back from root itself, untyped: root runs nothing of its own, so
// every error it returns is a mistake in the command line (exit code 2).
func execute(ctx context.Context, root *cobra.Command) error {
	cmd, err := root.ExecuteContextC(ctx)
	var u *usageError
	if err != nil && cmd == root && !errors.As(err, &u) {
		return &usageError{err}
	}
	return err
}
