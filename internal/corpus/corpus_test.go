package corpus

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeT records how a helper ended a test.
type fakeT struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeT) Helper()                        {}
func (f *fakeT) Skip(args ...any)               { f.skipped = true; panic(f) }
func (f *fakeT) Fatalf(format string, a ...any) { f.failed = true; panic(f) }

// run calls fn with a fakeT and says how it ended.
func run(fn func(t testing.TB)) (skipped, failed bool) {
	f := &fakeT{}
	func() {
		defer func() {
			if r := recover(); r != nil && r != f {
				panic(r)
			}
		}()
		fn(f)
	}()
	return f.skipped, f.failed
}

func TestAbsentSkipsOrFails(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nothing")
	t.Setenv(Env, missing)
	if skipped, failed := run(func(t testing.TB) { Dir(t) }); skipped || !failed {
		t.Errorf("%s=%s (absent): skipped %t, failed %t; want a failure", Env, missing, skipped, failed)
	}
	if skipped, failed := run(func(t testing.TB) { Find(t) }); skipped || !failed {
		t.Errorf("Find with %s set to an absent directory: skipped %t, failed %t; want a failure", Env, skipped, failed)
	}

	// Without the variable, from a module with no ../shared beside it.
	root := t.TempDir()
	mod := filepath.Join(root, "repo")
	if err := os.MkdirAll(filepath.Join(mod, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(mod, "pkg"))
	t.Setenv(Env, "")
	if skipped, failed := run(func(t testing.TB) { Dir(t) }); !skipped || failed {
		t.Errorf("absent corpus, %s unset: skipped %t, failed %t; want a skip", Env, skipped, failed)
	}
	if got := Find(t); got != "" {
		t.Errorf("Find = %q with no corpus, want \"\"", got)
	}
	t.Setenv(Env, "required")
	if skipped, failed := run(func(t testing.TB) { Dir(t) }); skipped || !failed {
		t.Errorf("absent corpus, %s=required: skipped %t, failed %t; want a failure", Env, skipped, failed)
	}

	// With ../shared/snapshots beside the module: found from a package
	// directory; a missing file and too few matches end the test.
	snaps := filepath.Join(root, "shared", "snapshots")
	if err := os.MkdirAll(filepath.Join(snaps, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(snaps, "a", "x.pickle"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := Path(t, "a/x.pickle"), filepath.Join(mod, "..", "shared", "snapshots", "a", "x.pickle"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	if skipped, failed := run(func(t testing.TB) { Path(t, "a/y.pickle") }); skipped || !failed {
		t.Errorf("a missing file with %s=required: skipped %t, failed %t; want a failure", Env, skipped, failed)
	}
	if got := Glob(t, "a/*.pickle", 1); len(got) != 1 {
		t.Errorf("Glob = %q, want one file", got)
	}
	if skipped, failed := run(func(t testing.TB) { Glob(t, "a/*.pickle", 2) }); !failed || skipped {
		t.Errorf("Glob of one file with min 2: skipped %t, failed %t; want a failure", skipped, failed)
	}
	if skipped, failed := run(func(t testing.TB) { AtLeast(t, "loop", 0, 1) }); !failed || skipped {
		t.Errorf("AtLeast(0, 1): skipped %t, failed %t; want a failure", skipped, failed)
	}
}

// TestTheCorpus checks the real corpus when there is one: the folders
// the tests read are there.
func TestTheCorpus(t *testing.T) {
	Glob(t, "torch2.11/*/snapshot.pickle", 10)
	Glob(t, "public/*.pickle", 30)
	Glob(t, "hostile/*.pickle", 5)
}
