package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/progress"
)

// fixture returns a snapshot committed under the repository's testdata.
func fixture(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "testdata", "snapshots", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadProgressAlways(t *testing.T) {
	file := fixture(t, "mlp_train.pickle")
	wantOut, quietErr, err := runSnapview(t, "summary", "--format", "torch", file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(quietErr, "loading") {
		t.Errorf("stderr is not a terminal, yet a bar was drawn: %q", quietErr)
	}

	// The fake terminal: draw from the first byte on a buffer.
	t.Setenv(progress.Env, "always")
	out, errOut, err := runSnapview(t, "summary", "--format", "torch", file)
	if err != nil {
		t.Fatal(err)
	}
	if out != wantOut {
		t.Errorf("the bar changed stdout")
	}
	if !strings.HasPrefix(errOut, "\rloading mlp_train.pickle ") || !strings.Contains(errOut, "100% [") {
		t.Errorf("stderr = %q, want a bar for mlp_train.pickle reaching 100%%", errOut)
	}
	if !strings.HasSuffix(errOut, "\r\033[K"+quietErr) {
		t.Errorf("stderr = %q, want the bar cleared before the command's own messages %q", errOut, quietErr)
	}

	t.Setenv(progress.Env, "never")
	if _, errOut, err := runSnapview(t, "summary", file); err != nil || strings.Contains(errOut, "loading") {
		t.Errorf("never: err %v, stderr %q", err, errOut)
	}
}

func TestLoadProgressErrors(t *testing.T) {
	t.Setenv(progress.Env, "always")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pickle")
	if err := os.WriteFile(bad, []byte("\x80\x04\x95\x10\x00\x00\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, file string }{
		{"missing", filepath.Join(dir, "nope.pickle")},
		{"truncated", bad},
		{"directory", dir},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, cmd := range []string{"summary", "segments", "state", "report"} {
				args := []string{cmd, tt.file}
				if cmd == "report" {
					args = []string{cmd, "-o", filepath.Join(dir, "r.html"), tt.file}
				}
				_, _, err := runSnapview(t, args...)
				if err == nil {
					t.Fatalf("%s: no error", cmd)
				}
				msg := err.Error()
				if !strings.Contains(msg, tt.file) || strings.Contains(msg, "\n") || exitCode(err) != 1 {
					t.Errorf("%s: error %q (exit %d), want one line naming %s, exit 1", cmd, msg, exitCode(err), tt.file)
				}
			}
		})
	}
}
