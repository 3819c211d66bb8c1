package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snapview/snapview/analyze/monitor"
	"github.com/snapview/snapview/cmd/snapview/internal/e2e"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startWatch runs `snapview watch args` in the background under ctx;
// the returned channel gets its error.
func startWatch(ctx context.Context, args ...string) (*syncBuffer, *syncBuffer, <-chan error) {
	root := newRootCmd()
	out, errOut := &syncBuffer{}, &syncBuffer{}
	root.SetIn(strings.NewReader(""))
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetArgs(append([]string{"watch"}, args...))
	done := make(chan error, 1)
	go func() { done <- execute(ctx, root) }()
	return out, errOut, done
}

// firstTrigger is the step at which the climb rule first holds, judged
// record by record as watch judges them.
func firstTrigger(t *testing.T, lines []string) int64 {
	t.Helper()
	w := &monitor.Watch{Rules: []monitor.StopRule{{Kind: monitor.StopClimb}}}
	for _, l := range lines {
		w.AddStatsLines([][]byte{[]byte(l)}, true)
		if w.Triggered != nil {
			return w.Stats.Records[w.Triggered.Record].Step
		}
	}
	t.Fatal("the climb never triggers on this log")
	return -1
}

// TestWatchStopsOnClimb: a writer appends a climbing memory_stats() log
// line by line at 10 Hz, with partial lines and a garbage line; watch
// exits 3 naming the step at which the climb rule first held, however
// late it read it.
func TestWatchStopsOnClimb(t *testing.T) {
	lines := e2e.MonitorLog(t, 300)
	want := firstTrigger(t, lines)
	path := filepath.Join(t.TempDir(), "train_memory.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, errOut, done := startWatch(ctx, "--stats", path, "--every", "20ms", "--stop-on", "climb")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	written := 0
	var werr error
write:
	for i, l := range lines {
		select {
		case werr = <-done:
			break write
		default:
		}
		if i == 3 {
			f.WriteString("{not json\n")
		}
		// Half a line, then the rest: watch waits for the newline.
		f.WriteString(l[:len(l)/2])
		time.Sleep(50 * time.Millisecond)
		f.WriteString(l[len(l)/2:] + "\n")
		written++
		time.Sleep(50 * time.Millisecond)
	}
	if written == len(lines) {
		werr = <-done
	}
	t.Logf("climb first holds at step %d; the writer had written %d records when watch exited", want, written)
	if werr == nil || exitCode(werr) != watchTriggered {
		t.Fatalf("watch: %v (exit %d), want exit %d\n%s", werr, exitCode(werr), watchTriggered, out)
	}
	wantMsg := fmt.Sprintf("device 0, step %d: allocated memory keeps climbing since step 10", want)
	if werr.Error() != "stopped: --stop-on climb held" || !strings.Contains(out.String(), wantMsg) {
		t.Errorf("stop message %q (stdout %q), want it to name %q", werr, out, wantMsg)
	}
	if !strings.Contains(errOut.String(), "line 4: not a JSON object") {
		t.Errorf("stderr %q, want a warning about the garbage line", errOut)
	}
	if strings.Count(out.String(), "device 0 step") == 0 {
		t.Errorf("no status line on stdout:\n%s", out)
	}
}

// TestWatchFlatKeepsRunning: on a flat log watch goes on until it is
// stopped; a log that shrinks is read again, as a new run, with a
// warning.
func TestWatchFlatKeepsRunning(t *testing.T) {
	flat := e2e.MonitorLog(t, 30)[:10] // steps 0-9: before the leak starts
	path := filepath.Join(t.TempDir(), "flat.jsonl")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut, done := startWatch(ctx, "--stats", path, "--every", "20ms", "--stop-on", "climb,retries,oom,10GiB")
	for round := range 3 {
		for _, l := range flat {
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(l + "\n")
			f.Close()
			time.Sleep(30 * time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("watch ended on a flat log: %v\n%s", err, out)
			default:
			}
		}
		if round == 1 {
			// The log is cut back (a restarted run truncates it).
			os.WriteFile(path, nil, 0o644)
		}
	}
	// Give watch a last read, then stop it as a person would.
	for !strings.Contains(errOut.String(), "shrank") {
		select {
		case err := <-done:
			t.Fatalf("watch ended: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("watch stopped with %v, want the cancellation", err)
	}
	if strings.Contains(out.String(), "stop (") {
		t.Errorf("a rule held on a flat log:\n%s", out)
	}
	// The truncated log is a new run: what was read before is set aside
	// and the numbering starts again, and stderr says so.
	if !strings.Contains(errOut.String(), "a new run: the ") || !strings.Contains(errOut.String(), "set aside, and records and lines are numbered from 1 again") {
		t.Errorf("stderr %q, want the new run said", errOut)
	}
}

func TestWatchUsage(t *testing.T) {
	testUsageErrors(t, []usageCase{
		{"nothing", []string{"watch"}, "nothing to watch"},
		{"bad rule", []string{"watch", "--stats", "x", "--stop-on", "soon"}, `--stop-on "soon"`},
		{"bad signal", []string{"watch", "--stats", "x", "--pid", "1", "--signal", "SIGNOPE"}, "want a signal name"},
		{"signal without pid", []string{"watch", "--stats", "x", "--signal", "SIGUSR1"}, "--signal needs --pid"},
		{"both stdin", []string{"watch", "--stats", "-", "--smi", "-"}, "cannot both read standard input"},
		{"zero every", []string{"watch", "--stats", "x", "--every", "0s"}, "--every must be above 0"},
	})
}

// TestWatchBadZone: a bad --tz is a usage error that names the flag once,
// as smi's does.
func TestWatchBadZone(t *testing.T) {
	_, _, err := runSnapview(t, "watch", "--stats", "x", "--tz", "Mars/Olympus")
	want := `--tz "Mars/Olympus": want a zone name (Europe/Berlin), UTC, Local or an offset (+02:00)`
	if err == nil || err.Error() != want || exitCode(err) != 2 {
		t.Errorf("error %v (exit %d), want %q (exit 2)", err, exitCode(err), want)
	}
}

// TestWatchSignalsPid: when a rule holds, --pid's process gets --signal,
// and watch reads its log from a pipe.
func TestWatchSignalsPid(t *testing.T) {
	victim := exec.Command("sleep", "600")
	if err := victim.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer victim.Process.Kill()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(strings.Join(e2e.MonitorLog(t, 30), "\n") + "\n"))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs([]string{"watch", "--stats", "-", "--every", "10ms", "--stop-on", "300MiB", "--pid", fmt.Sprint(victim.Process.Pid), "--signal", "SIGUSR1"})
	err := execute(context.Background(), root)
	if exitCode(err) != watchTriggered || !strings.Contains(out.String(), "step 27: reserved 314.0 MiB, above 300.0 MiB; sent SIGUSR1 to process") ||
		!strings.Contains(err.Error(), "stopped: --stop-on 300.0 MiB held; sent SIGUSR1 to process") {
		t.Fatalf("watch: %v (exit %d), want exit 3 naming the limit and the signal sent\n%s", err, exitCode(err), out.String())
	}
	werr := victim.Wait()
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ProcessState.String() != "signal: user defined signal 1" {
		t.Errorf("the process ended with %v, want SIGUSR1", werr)
	}
}

// TestWatchSMIPipe: an nvidia-smi log piped in (--smi -) is read to its
// end with --once and judged as snapview smi judges it.
func TestWatchSMIPipe(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "snapshots", "monitor_train.smi.csv"))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := runSnapviewIn(t, bytes.NewReader(b), "watch", "--smi", "-", "--once", "--tz", "UTC", "--stop-on", "climb", "--warmup", "5s")
	if exitCode(err) != watchTriggered {
		t.Fatalf("watch: %v, want exit 3\n%s", err, out)
	}
	for _, want := range []string{"<stdin>: 240 samples", "GPU 1 used    4.0 MiB",
		"stop (--stop-on climb): GPU 0 (nvidia-smi, line 240) used memory keeps climbing: +80.0 MiB, 1499.0 MiB → 1579.0 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestWatchBadLog: watch warns about the lines of a log it cannot read
// and goes on; a log it cannot open at all is a one-line error naming it,
// exit 1.
func TestWatchBadLog(t *testing.T) {
	for kind, path := range e2e.BadFiles(t) {
		t.Run(kind, func(t *testing.T) {
			_, stderr, err := runSnapview(t, "watch", "--once", "--stats", path, "--stop-on", "climb")
			if kind == "directory" {
				if err == nil || !strings.Contains(err.Error(), path) || exitCode(err) != 1 || strings.Contains(err.Error(), "\n") {
					t.Errorf("watch on a directory: %v (exit %d), want a one-line error naming it, exit 1", err, exitCode(err))
				}
				return
			}
			// A file watch can tell is not a log (a pickle) is refused at
			// once; one it cannot tell is read with warnings.
			if err != nil && (exitCode(err) != 1 || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n")) {
				t.Errorf("watch on a bad log: %v (exit %d), want warnings, or a one-line error naming it with exit 1", err, exitCode(err))
			}
			if strings.Count(stderr, "\n") > 0 && !strings.HasPrefix(stderr, "warning: ") {
				t.Errorf("stderr %q: want warnings", stderr)
			}
		})
	}
	_, _, err := runSnapview(t, "watch", "--once", "--stats", filepath.Join(t.TempDir(), "nope.jsonl"))
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Errorf("missing log: %v, want exit 1 naming it", err)
	}
}

// TestWatchSMIStartup: nvidia-smi samples piped in one by one and judged
// as they come. The first seconds of the log (the CUDA context created,
// a 512 MiB CuPy buffer filled) climb, and a climb that starts within the
// --warmup or from where the log started is start-up, not a leak: the
// default 30 s warm-up never stops this 14 s log; with 9 s, watch stops
// where snapview smi dates the real climb (from 1499 MiB, 9.7 s in).
func TestWatchSMIStartup(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "snapshots", "monitor_train.smi.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		warmup string
		want   string // "" for no stop
	}{
		{"30s", ""},
		{"9s", "used memory keeps climbing: +48.0 MiB, 1499.0 MiB → 1547.0 MiB"},
	} {
		pr, pw := io.Pipe()
		go func() {
			for _, l := range bytes.SplitAfter(b, []byte("\n")) {
				pw.Write(l)
			}
			pw.Close()
		}()
		// The pipe's lines are judged one by one as they arrive, however
		// they are batched: the smallest --every reads them as written.
		out, _, err := runSnapviewIn(t, pr, "watch", "--smi", "-", "--every", "1ms", "--tz", "UTC", "--stop-on", "climb", "--warmup", tt.warmup)
		if tt.want == "" {
			if err != nil || strings.Contains(out, "stop (") {
				t.Errorf("--warmup %s: %v, want no stop on the start-up climb\n%s", tt.warmup, err, out)
			}
			continue
		}
		if exitCode(err) != watchTriggered || !strings.Contains(out, tt.want) {
			t.Errorf("--warmup %s: %v, want exit 3 and %q\n%s", tt.warmup, err, tt.want, out)
		}
	}
}
