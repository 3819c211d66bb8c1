package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/cmd/snapview/internal/e2e"
)

// TestBadInputEveryCommand: every command answers bad input with an error
// that names the file, fits on one line and maps to exit code 1.
func TestBadInputEveryCommand(t *testing.T) {
	files := e2e.BadFiles(t)
	root := newRootCmd()
	for _, c := range root.Commands() {
		name := c.Name()
		if name == "help" || name == "completion" {
			continue
		}
		if name == "watch" {
			// A log being written may hold a bad line for a moment:
			// watch warns and goes on (TestWatchBadLog).
			continue
		}
		for kind, path := range files {
			t.Run(name+"/"+kind, func(t *testing.T) {
				args := []string{name, path}
				switch name {
				case "report":
					args = append(args, "-o", filepath.Join(t.TempDir(), "r.html"))
				case "diff":
					args = append(args, path) // BASE and NEW
				case "forecast":
					args = []string{name, "--to", "4", path + "=1", path + "=2"}
				case "slice", "convert":
					args = append(args, "-o", filepath.Join(t.TempDir(), "out.pickle"))
				case "check":
					args = append(args, "--no-oom")
				}
				if name == "export" {
					args = append(args, "--format", "folded", "-o", filepath.Join(t.TempDir(), "x.folded"))
				}
				_, _, err := runSnapview(t, args...)
				if err == nil {
					t.Fatal("no error")
				}
				msg := err.Error()
				if !strings.Contains(msg, path) {
					t.Errorf("error %q does not name the file", msg)
				}
				if strings.Contains(msg, "\n") {
					t.Errorf("error spans several lines: %q", msg)
				}
				if got := exitCode(err); got != 1 {
					t.Errorf("exit code %d, want 1", got)
				}
			})
		}
	}
}
