package selfprofile

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun: both profiles are written as gzipped pprof protos, also when f
// fails, whose error wins; a profile that cannot be written is an error
// naming its flag.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	p := Paths{CPU: filepath.Join(dir, "cpu.prof"), Mem: filepath.Join(dir, "mem.prof")}
	fail := errors.New("the command's own")
	if err := p.Run(context.Background(), func() error { return fail }); err != fail {
		t.Errorf("Run = %v, want f's error", err)
	}
	for _, path := range []string{p.CPU, p.Mem} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
			t.Errorf("%s: not a gzipped profile (%d bytes)", filepath.Base(path), len(b))
		}
	}
	bad := Paths{Mem: filepath.Join(dir, "no", "such", "dir")}
	if err := bad.Run(context.Background(), func() error { return nil }); err == nil || !strings.HasPrefix(err.Error(), "--memprofile: ") {
		t.Errorf("Run with an unwritable --memprofile = %v", err)
	}
	if err := (Paths{}).Run(context.Background(), func() error { return nil }); err != nil {
		t.Errorf("Run without profiles = %v", err)
	}
}
