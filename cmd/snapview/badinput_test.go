package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// badFiles writes one file for each kind of bad input and returns their
// paths by name.
func badFiles(t *testing.T) map[string]string {
	dir := t.TempDir()
	real, err := os.ReadFile(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"empty":          nil,
		"truncated":      real[:len(real)/2],
		"random":         []byte("\x13\x37 not a snapshot at all"),
		"class":          []byte("\x80\x02c__main__\nModel\nq\x00)\x81q\x01."),
		"wrong types":    []byte("\x80\x04}\x8c\x08segmentsK\x05s."),
		"hostile length": []byte("\x80\x04X\xff\xff\xff\xff"),
	}
	out := map[string]string{}
	for name, b := range files {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".pickle")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out[name] = p
	}
	out["directory"] = dir
	return out
}

// TestBadInputEveryCommand: every command answers bad input with an error
// that names the file, fits on one line and maps to exit code 1.
func TestBadInputEveryCommand(t *testing.T) {
	files := badFiles(t)
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

// TestBinaryBadInput runs the real binary: one line on stderr, exit code 1,
// no Go panic or stack trace.
func TestBinaryBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildSnapview(t)
	for kind, path := range badFiles(t) {
		t.Run(kind, func(t *testing.T) {
			cmd := exec.Command(bin, "summary", path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want code 1; stderr %q", err, stderr.String())
			}
			got := stderr.String()
			if !strings.HasPrefix(got, "snapview: ") || strings.Count(got, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting with \"snapview: \"", got)
			}
			if strings.Contains(got, "panic") || strings.Contains(got, "goroutine") {
				t.Errorf("stderr shows a Go panic: %q", got)
			}
		})
	}
}
