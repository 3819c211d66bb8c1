package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWriteFileAtomicModeAndName: an output keeps the mode of the file it
// replaces (a 0600 report stayed 0600 only by chance of the old code's
// 0644), a new one gets 0666 less the umask, and a name of 250 bytes (its
// temporary name was over the 255-byte limit) is written.
func TestWriteFileAtomicModeAndName(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	ctx := withOutputs(context.Background(), &outputs{})
	old := filepath.Join(dir, "old.html")
	if err := os.WriteFile(old, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeFileAtomic(ctx, old, write("new")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(old); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced file's mode %v, want 0600", st.Mode().Perm())
	}
	prev := syscall.Umask(0o077)
	defer syscall.Umask(prev)
	fresh := filepath.Join(dir, "fresh.html")
	if err := writeFileAtomic(ctx, fresh, write("new")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o600 {
		t.Errorf("new file's mode %v under umask 077, want 0600", st.Mode().Perm())
	}
	long := filepath.Join(dir, strings.Repeat("n", 245)+".html")
	if err := writeFileAtomic(ctx, long, write("new")); err != nil {
		t.Errorf("a 250-byte name: %v", err)
	}
}
