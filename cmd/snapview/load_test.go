package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	t.Setenv(progressEnv, "always")
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

	t.Setenv(progressEnv, "never")
	if _, errOut, err := runSnapview(t, "summary", file); err != nil || strings.Contains(errOut, "loading") {
		t.Errorf("never: err %v, stderr %q", err, errOut)
	}
}

func TestLoadProgressErrors(t *testing.T) {
	t.Setenv(progressEnv, "always")
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

func TestProgressBarLine(t *testing.T) {
	var w bytes.Buffer
	t0 := time.Unix(0, 0)
	clock := t0
	b := &progressBar{w: &w, name: "big.pickle", total: 200e6, start: t0, delay: time.Second, now: func() time.Time { return clock }}

	b.add(50e6) // before the delay: nothing
	if w.Len() != 0 {
		t.Fatalf("drawn before the delay: %q", w.String())
	}
	clock = t0.Add(1500 * time.Millisecond)
	b.add(50e6)
	want := "\rloading big.pickle  50% [===============>              ] 100.0/200.0 MB 1.5 s"
	if w.String() != want {
		t.Fatalf("got  %q\nwant %q", w.String(), want)
	}
	w.Reset()
	b.add(1e6) // too soon after the last draw
	if w.Len() != 0 {
		t.Fatalf("redrawn too soon: %q", w.String())
	}
	b.add(99e6) // the end is always drawn
	if !strings.Contains(w.String(), "100% [==============================] 200.0/200.0 MB") {
		t.Fatalf("end: %q", w.String())
	}
	w.Reset()
	b.finish()
	if w.String() != "\r\033[K" {
		t.Fatalf("finish wrote %q", w.String())
	}

	var quiet bytes.Buffer
	(&progressBar{w: &quiet}).finish()
	if quiet.Len() != 0 {
		t.Errorf("finish of a bar never drawn wrote %q", quiet.String())
	}
}
