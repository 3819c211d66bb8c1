// Package process runs the built snapview command as a process: signals
// during the load and at later moments, kill -9 mid-write, a full file
// system, bad input on the real binary, a build with VCS stamping off,
// and watch in a real terminal. The tests that run the commands
// in-process are cmd/snapview's.
package process

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/cmd/snapview/internal/e2e"
)

// snapview is the binary this package's tests share.
var snapview e2e.Binary

func TestMain(m *testing.M) {
	code := m.Run()
	snapview.Remove()
	os.Exit(code)
}

// TestBinaryBadInput runs the real binary: one line on stderr, exit code 1,
// no Go panic or stack trace.
func TestBinaryBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := snapview.Path(t)
	for kind, path := range e2e.BadFiles(t) {
		t.Run(kind, func(t *testing.T) {
			cmd := exec.Command(bin, "summary", path)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() != 1 {
				t.Fatalf("exit %v, want code 1; stderr %q", err, stderr.String())
			}
			got := stderr.String()
			if !strings.HasPrefix(got, "snapview: ") || strings.Count(got, "\n") != 1 {
				t.Errorf("stderr %q, want one line starting with \"snapview: \"", got)
			}
			if strings.Contains(got, "panic") || strings.Contains(got, "goroutine") {
				t.Errorf("stderr shows a Go panic: %q", got)
			}
		})
	}
}

// TestVersionWithoutVCS builds snapview as a build with VCS stamping off
// does (go build -buildvcs=false), with the commit given to the linker,
// and reads --version. (A build with neither is TestVersionOf's "no
// stamping, no commit".)
func TestVersionWithoutVCS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "snapview")
	const want = "snapview devel 0123456789ab go"
	if err := e2e.Build(bin, "-buildvcs=false", "-ldflags", "-X main.commit=0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	if !strings.HasPrefix(string(out), want) {
		t.Errorf("--version = %q, want it to start %q", out, want)
	}
}

// TestWatchTerminal runs watch in a real terminal (tmux): the view has the
// sparklines and verdicts, and the stop message stays on screen.
func TestWatchTerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not found (apt-get install tmux): skipping the terminal test")
	}
	bin := snapview.Path(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "train_memory.jsonl")
	if err := os.WriteFile(log, []byte(strings.Join(e2e.MonitorLog(t, 40), "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v\n%s", args, err, out)
		}
		return string(out)
	}
	defer exec.Command("tmux", "-S", sock, "kill-server").Run()
	// timeout: a watch that never stopped would leave the test waiting
	// for ever; it prints exit=124 instead.
	script := fmt.Sprintf("timeout 300 %s watch --every 50ms --stats %s --stop-on climb; echo exit=$?; tmux -S %s wait-for -S done; sleep 600", bin, log, sock)
	tmux("new-session", "-d", "-x", "140", "-y", "40", "sh", "-c", script)
	tmux("wait-for", "done") // blocks until watch has exited
	screen := tmux("capture-pane", "-p", "-J")
	for _, want := range []string{
		"snapview watch: every 50ms, stop on climb",
		"device 0, step 39",
		"allocated  281.1 MiB [",
		"Allocated memory keeps climbing: it started at step 10",
		"stop (--stop-on climb): device 0, step 39: allocated memory keeps climbing since step 10",
		"exit=3",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("screen lacks %q:\n%s", want, screen)
		}
	}
}
