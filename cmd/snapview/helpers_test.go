package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// built is the binary the tests that run it share: one go build per test
// process, not one per test (each link is seconds of CPU).
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// TestMain removes the shared binary after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildSnapview builds the command once into a temporary directory and
// returns its path.
func buildSnapview(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "snapview-test"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "snapview")
		if out, err := exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}
