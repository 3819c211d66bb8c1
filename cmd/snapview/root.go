package main

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/snapview/snapview/report/kit"
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "snapview",
		Short:         "read PyTorch CUDA memory snapshots offline and tell where the GPU memory went",
		Long:          helpText("snapview"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetVersionTemplate("snapview {{.Version}}\n")
	setHelpWidth(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err}
	})
	root.AddCommand(
		// Each command lives in its own file as newXxxCmd().
		newReportCmd(),
		newSummaryCmd(),
		newSegmentsCmd(),
		newStateCmd(),
		newExplainCmd(),
		newInfoCmd(),
		newLeaksCmd(),
		newWhatifCmd(),
		newForecastCmd(),
		newDiffCmd(),
		newRanksCmd(),
		newExportCmd(),
		newTraceCmd(),
		newStatsCmd(),
		newCheckCmd(),
		newWatchCmd(),
		newSMICmd(),
		newSliceCmd(),
		newConvertCmd(),
	)
	addProfileFlags(root)
	addLimitFlags(root)
	addRoundingFlag(root)
	addWidthFlag(root)
	return root
}

// exactArgs checks that a command got its n arguments, named as its Use
// line names them ("requires FILE"), and returns a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		names := strings.Fields(cmd.Use)[1:]
		switch {
		case len(args) < n && len(names) == n:
			return usageErrorf("%s requires %s (see snapview %s --help)", cmd.Name(), strings.Join(names[len(args):], " "), cmd.Name())
		case len(args) > n && len(names) == n:
			return usageErrorf("%s takes one %s, got %d arguments: %s", cmd.Name(), strings.Join(names, " "), len(args), strings.Join(args, " "))
		}
		return &usageError{cobra.ExactArgs(n)(cmd, args)}
	}
}

// commit is the commit snapview was built from when the build says so
// with -ldflags "-X main.commit=$(git rev-parse HEAD)", for a build
// without VCS stamping (-buildvcs=false, or a copy of the sources outside
// git). The linker sets it; nothing changes it at run time.
var commit string

// version returns snapview's version from what the build can know: the
// build information the Go toolchain embeds (the module version for
// `go install ...@version`, the VCS revision and "+dirty" for a build
// from a checkout), else the commit given to the linker, else "unknown
// commit".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	return versionOf(bi, ok, commit)
}

// versionOf is [version] of the build information bi (ok false when the
// binary has none) and the linker's commit.
func versionOf(bi *debug.BuildInfo, ok bool, commit string) string {
	if !ok {
		if commit != "" {
			return "devel " + shortRev(commit)
		}
		return "unknown (no build information, unknown commit)"
	}
	v := bi.Main.Version
	var rev, when, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	switch {
	case rev != "" && (v == "devel" || strings.Contains(v, "-0.")):
		v += " " + shortRev(rev) + dirty
		if when != "" {
			v += " " + when
		}
	case rev != "":
		// A release version names its commit.
	case commit != "":
		v += " " + shortRev(commit)
	case v == "devel":
		v += " (unknown commit: built without VCS stamping)"
	}
	return v + " " + bi.GoVersion
}

// shortRev is a commit hash cut to 12 characters, as go version -m shows.
func shortRev(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// execute runs root and returns its error. cobra's "unknown command" error
// comes back from root itself, untyped: root runs nothing of its own, so
// every error it returns is a mistake in the command line (exit code 2).
func execute(ctx context.Context, root *cobra.Command) error {
	fold := kit.NewWarnFold(root.ErrOrStderr())
	root.SetErr(fold)
	cmd, err := root.ExecuteContextC(ctx)
	fold.Flush()
	var u *usageError
	if err != nil && cmd == root && !errors.As(err, &u) {
		return &usageError{oneLineSuggestions(err)}
	}
	return err
}

// oneLineSuggestions rewrites cobra's multi-line "Did you mean this?"
// suffix of an unknown-command error as one line, since errors print on
// one line with their control characters escaped: `unknown command
// "sumary" for "snapview" (did you mean summary?)`.
func oneLineSuggestions(err error) error {
	head, tail, ok := strings.Cut(err.Error(), "\n\nDid you mean this?\n")
	if !ok {
		return err
	}
	names := strings.Fields(tail)
	if len(names) == 0 {
		return errors.New(head)
	}
	return fmt.Errorf("%s (did you mean %s?)", head, strings.Join(names, " or "))
}
