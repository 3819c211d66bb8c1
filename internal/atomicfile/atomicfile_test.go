package atomicfile

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWrite: the old file stays when the write fails or the
// context is cancelled, links are replaced and not followed, special
// files are written in place, and nothing temporary is left behind.
func TestWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	target := filepath.Join(dir, "out.html")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	noTemp := func(t *testing.T) {
		t.Helper()
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".tmp") {
				t.Errorf("temporary file %s left", e.Name())
			}
		}
	}
	content := func(p string) string {
		b, _ := os.ReadFile(p)
		return string(b)
	}
	if err := Write(ctx, target, write("one")); err != nil || content(target) != "one" {
		t.Fatalf("write: %v, content %q", err, content(target))
	}
	t.Run("write fails", func(t *testing.T) {
		err := Write(ctx, target, func(w io.Writer) error {
			io.WriteString(w, "partial")
			return errors.New("disk on fire")
		})
		if err == nil || !strings.Contains(err.Error(), target) {
			t.Errorf("error %v, want one naming %s", err, target)
		}
		if got := content(target); got != "one" {
			t.Errorf("old file now %q", got)
		}
		noTemp(t)
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := Write(cctx, target, write("two")); !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want context.Canceled", err)
		}
		if got := content(target); got != "one" {
			t.Errorf("old file now %q", got)
		}
		noTemp(t)
	})
	t.Run("stopped by a signal", func(t *testing.T) {
		outs := &Outputs{}
		sctx := WithOutputs(ctx, outs)
		err := Write(sctx, target, func(w io.Writer) error {
			outs.RemoveAll() // the signal arrives while writing
			_, err := io.WriteString(w, "three")
			return err
		})
		if err == nil {
			t.Error("no error after the outputs were removed")
		}
		if got := content(target); got != "one" {
			t.Errorf("old file now %q", got)
		}
		noTemp(t)
	})
	t.Run("symlink", func(t *testing.T) {
		real := filepath.Join(dir, "real.html")
		link := filepath.Join(dir, "link.html")
		os.WriteFile(real, []byte("real"), 0o644)
		os.Symlink(real, link)
		if err := Write(ctx, link, write("new")); err != nil {
			t.Fatal(err)
		}
		// Written through (issue 28): the link stays, its target is
		// replaced.
		if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
			t.Error("the link was replaced by a file")
		}
		if content(real) != "new" {
			t.Errorf("real %q; want the link's target written", content(real))
		}
	})
	t.Run("hard link", func(t *testing.T) {
		a := filepath.Join(dir, "a.html")
		b := filepath.Join(dir, "b.html")
		os.WriteFile(a, []byte("shared"), 0o644)
		os.Link(a, b)
		if err := Write(ctx, b, write("new")); err != nil {
			t.Fatal(err)
		}
		if content(a) != "shared" || content(b) != "new" {
			t.Errorf("a %q, b %q", content(a), content(b))
		}
	})
	t.Run("directory", func(t *testing.T) {
		if err := Write(ctx, dir, write("x")); err == nil {
			t.Error("no error writing over a directory")
		}
	})
	t.Run("/dev/full", func(t *testing.T) {
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full")
		}
		err := Write(ctx, "/dev/full", write(strings.Repeat("x", 1<<16)))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("error %v, want ENOSPC", err)
		}
	})
	t.Run("/dev/null", func(t *testing.T) {
		if err := Write(ctx, os.DevNull, write("x")); err != nil {
			t.Error(err)
		}
	})
}

// TestWriteModeAndName: an output keeps the mode of the file it
// replaces (a 0600 report stayed 0600 only by chance of the old code's
// 0644), a new one gets 0666 less the umask, and a name of 250 bytes (its
// temporary name was over the 255-byte limit) is written.
func TestWriteModeAndName(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	ctx := WithOutputs(context.Background(), &Outputs{})
	old := filepath.Join(dir, "old.html")
	if err := os.WriteFile(old, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(ctx, old, write("new")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(old); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced file's mode %v, want 0600", st.Mode().Perm())
	}
	prev := syscall.Umask(0o077)
	defer syscall.Umask(prev)
	fresh := filepath.Join(dir, "fresh.html")
	if err := Write(ctx, fresh, write("new")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(fresh); st.Mode().Perm() != 0o600 {
		t.Errorf("new file's mode %v under umask 077, want 0600", st.Mode().Perm())
	}
	long := filepath.Join(dir, strings.Repeat("n", 245)+".html")
	if err := Write(ctx, long, write("new")); err != nil {
		t.Errorf("a 250-byte name: %v", err)
	}
}
