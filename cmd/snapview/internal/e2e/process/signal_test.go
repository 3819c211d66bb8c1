package process

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snapview/snapview/cmd/snapview/internal/e2e"
	"github.com/snapview/snapview/internal/corpus"
	"golang.org/x/sys/unix"
)

// startSnapview starts bin with args; stdin is a pipe the test controls.
func startSnapview(t *testing.T, bin string, args ...string) (*exec.Cmd, *os.File, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SNAPVIEW_PROGRESS=never")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	r, stdin, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	return cmd, stdin, &stderr
}

// The signal tests signal a command once it has reached a state, never
// after a fixed delay from its start: on a loaded machine a process may
// not even have installed its signal handler (main's first statement)
// 200 ms after exec, and the runtime's default action then ends it with
// no exit code. Each wait polls the process's state, with no time limit
// of its own (go test's -timeout is the backstop).

// waitDrained waits until the process at the other end of the pipe w has
// read everything written to it (FIONREAD of the pipe is 0): it is then
// past its start, in its reading.
func waitDrained(t *testing.T, w *os.File) {
	t.Helper()
	for {
		n, err := unix.IoctlGetInt(int(w.Fd()), unix.TIOCINQ) // FIONREAD
		if err != nil {
			t.Fatalf("FIONREAD: %v", err)
		}
		if n == 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// waitOpened waits until the process cmd has path open (one of the links
// in /proc/PID/fd names it): it is then past its start, loading path.
func waitOpened(t *testing.T, cmd *exec.Cmd, path string) {
	t.Helper()
	want, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatal(err)
	}
	fds := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "fd")
	for {
		ents, err := os.ReadDir(fds)
		if err != nil {
			t.Fatalf("%s: %v (the command ended before it opened %s?)", fds, err, path)
		}
		for _, e := range ents {
			if l, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && l == want {
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// waitExit waits for cmd and returns its exit code and how long it took,
// for the log only: how fast a loaded machine lets it stop is no test
// (the program's 0.3 s graceStop is its own). A command that never stops
// is left to go test's -timeout.
func waitExit(t *testing.T, cmd *exec.Cmd) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	err := cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("wait: %v", err)
	}
	return cmd.ProcessState.ExitCode(), time.Since(start)
}

// TestSignalDuringLoad: SIGINT or SIGTERM while the snapshot is being read
// (standard input stalls mid-pickle) stops the command with 130 or 143.
func TestSignalDuringLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := snapview.Path(t)
	for _, tt := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		for _, cmdName := range []string{"summary", "segments", "info", "state", "leaks", "report"} {
			t.Run(tt.sig.String()+"/"+cmdName, func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "r.html")
				args := []string{cmdName, "-"}
				if cmdName == "report" {
					args = []string{cmdName, "-o", out, "-"}
				}
				cmd, stdin, stderr := startSnapview(t, bin, args...)
				defer stdin.Close()
				// The start of a pickle, then nothing: the decoder waits.
				stdin.Write([]byte("\x80\x04}(\x8c\x08segments]"))
				waitDrained(t, stdin)
				cmd.Process.Signal(tt.sig)
				code, took := waitExit(t, cmd)
				t.Logf("exit %d %v after the signal", code, took)
				if code != tt.want {
					t.Errorf("exit %d, want %d; stderr %q", code, tt.want, stderr.String())
				}
				if !strings.Contains(stderr.String(), "interrupted") {
					t.Errorf("stderr %q, want it to say interrupted", stderr.String())
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("%s written after the signal", out)
				}
			})
		}
	}
}

// bigSnapshot returns the 2M-entry shared snapshot, or skips.
func bigSnapshot(t *testing.T) string {
	t.Helper()
	return corpus.Path(t, "big/gpt2_2M_events/snapshot.pickle.xz")
}

// TestSignalAtMoments sends SIGINT to report and leaks on the 2M-entry
// file at several moments (in the load, in the analysis, while writing):
// each exits 130 and leaves neither the report nor a temporary file. A
// second SIGINT right after the first exits at once too.
func TestSignalAtMoments(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	big := bigSnapshot(t)
	bin := snapview.Path(t)
	for _, after := range []time.Duration{50 * time.Millisecond, 500 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second} {
		for _, twice := range []bool{false, true} {
			name := after.String()
			if twice {
				name += "/twice"
			}
			t.Run(name, func(t *testing.T) {
				dir := t.TempDir()
				out := filepath.Join(dir, "r.html")
				cmd, stdin, stderr := startSnapview(t, bin, "report", "-o", out, big)
				stdin.Close()
				waitOpened(t, cmd, big)
				time.Sleep(after) // a moment of the run, not a limit
				cmd.Process.Signal(syscall.SIGINT)
				if twice {
					cmd.Process.Signal(syscall.SIGINT)
				}
				code, took := waitExit(t, cmd)
				t.Logf("exit %d %v after the signal", code, took)
				if code == 0 {
					t.Skipf("the report was done before the signal at %v", after)
				}
				if code != 130 {
					t.Errorf("exit %d, want 130; stderr %q", code, stderr.String())
				}
				left, _ := os.ReadDir(dir)
				for _, e := range left {
					t.Errorf("left %s in the output directory", e.Name())
				}
			})
		}
	}
}

// TestKill9MidWrite kills report with SIGKILL at several moments, the
// last ones as soon as its temporary file appears (mid-write): the target
// is then the old report whole or the new one whole, never part of one
// (the temporary file may stay: SIGKILL cannot be caught).
func TestKill9MidWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	big := bigSnapshot(t)
	bin := snapview.Path(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "r.html")
	old := []byte("<!DOCTYPE html><title>old report</title>\n")
	tempSeen := func() bool {
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if strings.HasSuffix(e.Name(), ".tmp") {
				return true
			}
		}
		return false
	}
	for i, after := range []time.Duration{300 * time.Millisecond, 2 * time.Second, -1, -1, -1} {
		for _, e := range must(os.ReadDir(dir)) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
		if err := os.WriteFile(out, old, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd, stdin, _ := startSnapview(t, bin, "report", "-o", out, big)
		stdin.Close()
		moment := after.String()
		if after >= 0 {
			time.Sleep(after)
		} else {
			moment = "the temporary file's appearance"
			deadline := time.Now().Add(60 * time.Second)
			for !tempSeen() && time.Now().Before(deadline) && cmd.ProcessState == nil {
				time.Sleep(200 * time.Microsecond)
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("kill %d at %s: the report is gone: %v", i, moment, err)
		}
		if !bytes.Equal(got, old) && !bytes.HasSuffix(bytes.TrimSpace(got), []byte("</html>")) {
			t.Errorf("kill %d at %s: %s holds %d bytes that are neither the old report nor a whole new one", i, moment, out, len(got))
		}
		t.Logf("kill %d at %s: %s is the %s report (temporary file left: %v)", i, moment, out, map[bool]string{true: "old", false: "new"}[bytes.Equal(got, old)], tempSeen())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestFullFilesystem writes a report onto a small tmpfs that cannot hold
// it: the old report stays whole, no temporary file is left, exit code 1
// with one line naming the file. Needs root to mount (skips otherwise).
func TestFullFilesystem(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs: %v %s", err, out)
	}
	defer exec.Command("umount", dir).Run()
	bin := snapview.Path(t)
	out := filepath.Join(dir, "r.html")
	old := []byte("<!DOCTYPE html><title>old report</title>\n")
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "report", "-o", out, e2e.Repo(t, "testdata/snapshots/mlp_train.pickle"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1; stderr %q", err, stderr.String())
	}
	if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, out) || !strings.Contains(msg, "no space") {
		t.Errorf("stderr %q, want one line naming %s and the full disk", msg, out)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, old) {
		t.Errorf("the old report is now %d bytes", len(got))
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 1 {
		t.Errorf("the directory holds %d files, want the old report only", len(es))
	}
	// And to /dev/full, written in place.
	cmd = exec.Command(bin, "report", "-o", "/dev/full", e2e.Repo(t, "testdata/snapshots/mlp_train.pickle"))
	stderr.Reset()
	cmd.Stderr = &stderr
	cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "/dev/full") {
		t.Errorf("report -o /dev/full: exit %d, stderr %q", code, stderr.String())
	}
}
