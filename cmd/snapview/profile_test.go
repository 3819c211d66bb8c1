package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	file := fixture(t, "mlp_train.pickle")
	want, _, err := runSnapview(t, "summary", file)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runSnapview(t, "--cpuprofile", cpu, "--memprofile", mem, "summary", file)
	if err != nil {
		t.Fatal(err)
	}
	if out != want {
		t.Errorf("profiling changed the output")
	}
	for _, p := range []string{cpu, mem} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// pprof profiles are gzipped protocol buffers.
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: not a gzipped profile (%d bytes)", filepath.Base(p), len(b))
		}
	}

	// A failing command still writes its profiles and keeps its error.
	os.Remove(cpu)
	_, _, err = runSnapview(t, "summary", "--cpuprofile", cpu, filepath.Join(dir, "nope.pickle"))
	if err == nil || !strings.Contains(err.Error(), "nope.pickle") {
		t.Errorf("error = %v, want the command's own", err)
	}
	if _, err := os.Stat(cpu); err != nil {
		t.Errorf("no CPU profile after a failure: %v", err)
	}

	// An unwritable profile is an error naming the flag.
	_, _, err = runSnapview(t, "summary", "--cpuprofile", filepath.Join(dir, "no", "such", "dir"), file)
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Errorf("error = %v, want one naming --cpuprofile", err)
	}

	// The flags are hidden.
	help, _, err := runSnapview(t, "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(help, "profile") {
		t.Errorf("--help shows the profiling flags:\n%s", help)
	}
}
