package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReportUsageErrors(t *testing.T) {
	// The file is never opened: usage is checked first.
	testUsageErrors(t, []usageCase{
		{"no file", []string{"report"}, "report requires FILE"},
		{"base and two files", []string{"report", "--base", "a", "b", "c"}, "got 2 files"},
		{"top zero", []string{"report", "--top", "0", "x.pickle"}, "--top must be at least 1"},
		{"empty output", []string{"report", "-o", "", "x.pickle"}, "--output must name a file"},
		{"negative device", []string{"report", "--device", "-1", "x.pickle"}, "device ordinal"},
		{"device not a number", []string{"report", "-d", "one", "x.pickle"}, "device ordinal"},
		{"unknown flag", []string{"report", "--format", "html", "x.pickle"}, "unknown flag"},
	})
}

func TestReportMissingFile(t *testing.T) {
	testMissingFile(t, "report", "-o", filepath.Join(t.TempDir(), "r.html"))
}

func TestReportHelp(t *testing.T) {
	out, _, err := runSnapview(t, "report", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"report FILE", "no network", "--output", "--device", "--top", "snapview report -o oom.html"} {
		if !strings.Contains(out, want) {
			t.Errorf("report --help lacks %q:\n%s", want, out)
		}
	}
}

func TestReportFile(t *testing.T) {
	snap := sharedSnapshot(t, "torch2.11/oom/snapshot.pickle")
	out := filepath.Join(t.TempDir(), "oom.html")
	stdout, stderr, err := runSnapview(t, "report", "-o", out, "--top", "3", snap)
	if err != nil {
		t.Fatal(err)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing (the report goes to the file)", stdout)
	}
	if !strings.HasPrefix(stderr, "wrote "+out+" (") {
		t.Errorf("stderr = %q, want the file and its size", stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", `id="timeline_d0"`, "OOM at entry", "PyTorch CUDA memory summary, device ID 0", "CUDA OOMs: 1"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// --top 3: three stack groups and "other".
	if n := strings.Count(string(page), `<span class="swatch" style="background:`); n != 3+1+3 { // groups + other + the three block states
		t.Errorf("%d swatches, want %d", n, 3+1+3)
	}
}

func TestReportStdoutAndDevice(t *testing.T) {
	snap := sharedSnapshot(t, "torch2.11/two_devices/snapshot.pickle")
	stdout, stderr, err := runSnapview(t, "report", "-o", "-", "--device", "1", snap)
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "" {
		t.Errorf("stderr = %q, want nothing", stderr)
	}
	if !strings.HasPrefix(stdout, "<!DOCTYPE html>") || !strings.Contains(stdout, "<h2>Device 1</h2>") || strings.Contains(stdout, "<h2>Device 0</h2>") {
		t.Errorf("report -o - --device 1: want a page with device 1 only (%d bytes)", len(stdout))
	}
	_, _, err = runSnapview(t, "report", "-o", "-", "--device", "5", snap)
	if err == nil || exitCode(err) != 2 || !strings.HasSuffix(err.Error(), snap+": --device 5: the snapshot has no device 5 (devices: 0, 1)") {
		t.Errorf("--device 5: error %v, want a usage error listing the devices", err)
	}
}

// TestReportMissingDir: an -o in a folder that does not exist names the
// file asked for, not the temporary one it would have been written to.
func TestReportMissingDir(t *testing.T) {
	out := filepath.Join(t.TempDir(), "no", "such", "x.html")
	_, _, err := runSnapview(t, "report", "-o", out, filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err == nil || !strings.Contains(err.Error(), out) || strings.Contains(err.Error(), ".tmp") {
		t.Errorf("error = %v, want one naming %s", err, out)
	}
}

// TestReportDir: `report DIR` is the ranks page of the directory's
// snapshot files, found as `ranks DIR` finds them (the same page as
// naming the files), and a directory with no snapshot file or with
// several steps is a usage error naming it.
func TestReportDir(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "snapshots", "ranks_apart")
	out := t.TempDir()
	byDir, byFiles := filepath.Join(out, "dir.html"), filepath.Join(out, "files.html")
	if _, stderr, err := runSnapview(t, "report", "-o", byDir, dir); err != nil {
		t.Fatalf("report DIR: %v\n%s", err, stderr)
	}
	if _, stderr, err := runSnapview(t, "report", "-o", byFiles,
		filepath.Join(dir, "rank0", "snapshot.pickle.xz"), filepath.Join(dir, "rank1", "snapshot.pickle.xz")); err != nil {
		t.Fatalf("report FILES: %v\n%s", err, stderr)
	}
	a, err := os.ReadFile(byDir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(byFiles)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("report DIR wrote %d bytes, report with its two files %d: the pages differ", len(a), len(b))
	}

	steps := t.TempDir()
	for _, f := range []string{"step-1/rank0.pickle", "step-1/rank1.pickle", "step-2/rank0.pickle", "step-2/rank1.pickle"} {
		p := filepath.Join(steps, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not read"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ dir, want string }{
		{t.TempDir(), "no snapshot files"},
		{steps, "holds 2 steps"},
	} {
		_, _, err := runSnapview(t, "report", "-o", filepath.Join(out, "x.html"), tt.dir)
		if code := exitCode(err); code != 2 || !strings.Contains(fmt.Sprint(err), tt.want) {
			t.Errorf("report %s: exit %d, error %v; want 2 and %q", tt.dir, code, err, tt.want)
		}
	}
}
