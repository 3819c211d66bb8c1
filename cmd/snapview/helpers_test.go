package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
)

// runSnapview runs the root command with args, as main does, and returns
// its stdout, stderr and error.
func runSnapview(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return runSnapviewIn(t, strings.NewReader(""), args...)
}

// runSnapviewIn is runSnapview with stdin.
func runSnapviewIn(t *testing.T, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	// The text views read COLUMNS: the tests expect the 120 columns of a
	// pipe, whatever terminal runs them.
	t.Setenv("COLUMNS", "")
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetIn(stdin)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err = execute(context.Background(), root)
	return out.String(), errOut.String(), err
}

// sharedSnapshot returns a file of the shared corpus (rel is
// slash-separated under its snapshots directory), or ends the test when
// it is absent (see internal/corpus).
func sharedSnapshot(t *testing.T, rel string) string {
	t.Helper()
	return corpus.Path(t, rel)
}

// usageCase is a command line that must fail as a usage error (exit code
// 2) with an error containing want ("" accepts any error).
type usageCase struct {
	name string
	args []string
	want string
}

// testUsageErrors runs each case as a subtest.
func testUsageErrors(t *testing.T, tests []usageCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runSnapview(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%q: error = %v, want one containing %q", tt.args, err, tt.want)
			}
			if got := exitCode(err); got != 2 {
				t.Errorf("%q: exit code %d (%v), want 2 (usage)", tt.args, got, err)
			}
		})
	}
}

// testMissingFile runs snapview with args followed by a file that does
// not exist, and wants a failure with exit code 1.
func testMissingFile(t *testing.T, args ...string) {
	t.Helper()
	args = append(args, filepath.Join(t.TempDir(), "nope.pickle"))
	_, _, err := runSnapview(t, args...)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("%q: error = %v (exit %d), want a failure with exit code 1", args, err, exitCode(err))
	}
}
