// Package e2e holds what the tests that run the built snapview command
// share: the binary, built once per test process, the repository's own
// files, and the bad inputs both the in-process and the binary tests feed
// it. The tests that run the binary live in packages of their own below
// it (hostile, sweep, process), so that each gets go test's own timeout
// and go test runs them beside the others; cmd/snapview's tests run the
// commands in-process.
package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Binary is the snapview command built for one test process: the first
// Path builds it (one go build, seconds of CPU for the link), later calls
// share it. The zero value is ready to use; Remove deletes it.
type Binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// Path builds the command on the first call and
// returns the binary's path, or ends t when the build fails.
func (b *Binary) Path(t testing.TB) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "snapview-e2e"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, "snapview")
		b.err = Build(b.path)
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// Remove deletes the binary and its directory, if Path built one.
func (b *Binary) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// Build runs go build for cmd/snapview into out, with the extra go build
// flags given (for example -buildvcs=false). It returns go build's
// output with its error.
func Build(out string, flags ...string) error {
	root, err := findRoot()
	if err != nil {
		return err
	}
	args := append(append([]string{"build"}, flags...), "-o", out, "./cmd/snapview")
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return nil
}

// findRoot returns the repository's root: the nearest directory above the
// working directory (go test runs a test in its package's directory) that
// holds go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = up
	}
}

// Repo returns the path of rel (slash-separated, from the repository's
// root), or ends t when the root cannot be found.
func Repo(t testing.TB, rel string) string {
	t.Helper()
	root, err := findRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, filepath.FromSlash(rel))
}

// BadFiles writes one file for each kind of bad input (empty, truncated,
// random bytes, a pickled class, wrong types, a hostile length) into a
// temporary directory and returns their paths by kind, with "directory"
// for the directory itself.
func BadFiles(t testing.TB) map[string]string {
	t.Helper()
	dir := t.TempDir()
	real, err := os.ReadFile(Repo(t, "testdata/snapshots/mlp_train.pickle"))
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

// MonitorLog returns the lines of testdata's monitor_train memory_stats()
// log (allocated memory keeps 4 MiB a step from step 10), extended to n
// lines by records that go on adding 4 MiB a step.
func MonitorLog(t testing.TB, n int) []string {
	t.Helper()
	b, err := os.ReadFile(Repo(t, "testdata/snapshots/monitor_train.stats.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	for step := len(lines); len(lines) < n; step++ {
		rec := maps.Clone(last)
		rec["step"] = step
		for _, k := range []string{"allocated_bytes.all.current", "allocated_bytes.large_pool.current", "reserved_bytes.all.current", "reserved_bytes.large_pool.current"} {
			rec[k] = last[k].(float64) + float64(int64(step-29)<<22)
		}
		for _, k := range []string{"allocated_bytes.all.peak", "allocated_bytes.large_pool.peak", "reserved_bytes.all.peak", "reserved_bytes.large_pool.peak"} {
			rec[k] = max(last[k].(float64), rec[strings.TrimSuffix(k, "peak")+"current"].(float64))
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, string(b))
	}
	return lines
}
