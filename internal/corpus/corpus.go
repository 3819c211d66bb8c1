// Package corpus finds the shared corpus of real snapshots for tests:
// the PyTorch recordings, public files, field logs, hostile inputs and
// benchmarks kept beside the repository in ../shared/snapshots (its
// README says what each holds). Every test that reads the corpus finds it
// here.
//
// A test that needs the corpus is skipped when it is absent, unless the
// environment says it is required: with SNAPVIEW_CORPUS=required (as
// .ci/run sets it) an absent corpus, or an absent file of it, fails the
// test instead. SNAPVIEW_CORPUS may also name the snapshots directory
// itself, which is then required.
package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Env is the environment variable that makes the corpus required.
const Env = "SNAPVIEW_CORPUS"

// Required reports whether SNAPVIEW_CORPUS asks for the corpus: an absent
// corpus then fails a test rather than skipping it.
func Required() bool { return os.Getenv(Env) != "" }

// locate returns the snapshots directory: SNAPVIEW_CORPUS when it names
// one, else ../shared/snapshots beside the module root (the directory
// holding go.mod, found upward from the working directory, which go test
// sets to the package's). The error says where it looked.
func locate() (string, error) {
	if v := os.Getenv(Env); v != "" && v != "required" {
		if fi, err := os.Stat(v); err != nil || !fi.IsDir() {
			return "", fmt.Errorf("%s=%s is not a directory", Env, v)
		}
		return v, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(root)
		if up == root {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
		root = up
	}
	dir := filepath.Join(root, "..", "shared", "snapshots")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("the shared corpus is absent: no directory %s", dir)
	}
	return dir, nil
}

// absent skips t, or fails it when the corpus is required.
func absent(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required() {
		t.Fatalf("%s (%s is set, so the corpus is required)", msg, Env)
	}
	t.Skip(msg + " (set " + Env + "=required to fail instead)")
}

// Dir returns the corpus's snapshots directory, or ends t: skipped when
// the corpus is absent, failed when it is required.
func Dir(t testing.TB) string {
	t.Helper()
	dir, err := locate()
	if err != nil {
		absent(t, "%v", err)
	}
	return dir
}

// Find returns the snapshots directory, or "" when the corpus is absent
// and not required (failing t when it is), for a test that runs on
// other inputs too and adds the corpus's when it can.
func Find(t testing.TB) string {
	t.Helper()
	dir, err := locate()
	if err != nil {
		if Required() {
			t.Fatalf("%v (%s is set, so the corpus is required)", err, Env)
		}
		return ""
	}
	return dir
}

// Path returns the corpus file or directory rel (a slash-separated path
// under the snapshots directory, such as "torch2.11/oom/snapshot.pickle"),
// or ends t as [Dir] does when the corpus or that file is absent.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		absent(t, "corpus file %s is absent: %v", rel, err)
	}
	return p
}

// Glob returns the corpus paths matching pattern (a filepath.Match
// pattern under the snapshots directory, such as "torch2.11/*/
// snapshot.pickle"), sorted, and fails t when fewer than min match: a loop
// over corpus files must not pass on none. It ends t as [Dir] does when
// the corpus is absent.
func Glob(t testing.TB, pattern string, min int) []string {
	t.Helper()
	return Match(t, Dir(t), pattern, min)
}

// Match is [Glob] under dir, for a loop over files of any directory
// (testdata included): the paths matching pattern, sorted, failing t
// when fewer than min match.
func Match(t testing.TB, dir, pattern string, min int) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pattern)))
	if err != nil {
		t.Fatalf("corpus: bad pattern %q: %v", pattern, err)
	}
	sort.Strings(m)
	if len(m) < min {
		t.Fatalf("%d files match %s under %s, want at least %d", len(m), pattern, dir, min)
	}
	return m
}

// AtLeast fails t when a loop over corpus files saw fewer than min of
// them (n): for a loop that walks a directory or filters what it globbed.
func AtLeast(t testing.TB, what string, n, min int) {
	t.Helper()
	if n < min {
		t.Fatalf("%s: %d corpus files, want at least %d", what, n, min)
	}
}
