package process

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/snapview/snapview/cmd/snapview/internal/e2e"
)

// tightAS is the address-space limit (ulimit -v, KiB) of
// TestTightAddressSpace: 1.5 GB, where the Go runtime's own reservations
// (about 1.2 GiB) leave some 200 MiB. Before the fix a run on a 45 KB
// file died at random there with "fatal error: out of memory" (5 runs in
// 40: glibc's per-thread malloc arenas took the room).
const tightAS = 1_500_000

// runUnderAS runs bin with args under an address-space limit of limitKiB
// and returns its exit code, stdout and stderr.
func runUnderAS(t *testing.T, bin string, limitKiB int, args ...string) (int, string, string) {
	t.Helper()
	script := "ulimit -v " + strconv.Itoa(limitKiB) + ` && exec "$0" "$@"`
	cmd := exec.Command("sh", append([]string{"-c", script, bin}, args...)...)
	cmd.Env = append(os.Environ(), "SNAPVIEW_PROGRESS=never", "GOMEMLIMIT=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("running %q: %v", args, err)
	return 0, "", ""
}

// memoRefsPickle returns a snapshot pickle whose one device's trace is
// one memoized alloc entry appended n+1 times (BINGET, 3 bytes each): 48
// bytes of decoded objects per 3 bytes of file, within the default
// budget (64 MiB plus 8 bytes per byte) up to about 1.4 million
// references.
func memoRefsPickle(n int) []byte {
	str := func(s string) []byte { return append([]byte{0x8c, byte(len(s))}, s...) }
	var b bytes.Buffer
	b.Write([]byte("\x80\x04}("))
	b.Write(str("segments"))
	b.WriteByte(']')
	b.Write(str("device_traces"))
	b.Write([]byte("](]}("))
	for _, kv := range [][2][]byte{
		{str("action"), str("alloc")},
		{str("addr"), binary.LittleEndian.AppendUint32([]byte{'J'}, 1<<28)},
		{str("size"), []byte("M\x00\x02")},
		{str("stream"), []byte("K\x00")},
		{str("time_us"), []byte("J\x01\x00\x00\x00")},
		{str("frames"), []byte("]")},
	} {
		b.Write(kv[0])
		b.Write(kv[1])
	}
	b.Write([]byte("uq\x07a"))
	b.Write(bytes.Repeat([]byte("h\x07a"), n))
	b.Write([]byte("eu."))
	return b.Bytes()
}

// TestTightAddressSpace runs every command under ulimit -v 1.5 GB: on
// small files each answers (exit 0) as it does without the limit, three
// times over (the fault was random); a file whose decoded objects pass
// what the room allows, and that loads without the limit, ends in the
// memory limit's one-line error, exit 1. Never a runtime crash.
func TestTightAddressSpace(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it under ulimit -v")
	}
	bin := snapview.Path(t)
	dir := t.TempDir()
	snaps := e2e.Repo(t, "testdata/snapshots")
	mlp := filepath.Join(snaps, "mlp_train.pickle")
	runs := [][]string{
		{"summary", mlp},
		{"summary", "--json", filepath.Join(snaps, "mlp_train.pickle.gz")},
		{"summary", filepath.Join(snaps, "tiny.json")},
		{"summary", filepath.Join(snaps, "mlp_train.stats.json")},
		{"segments", mlp},
		{"state", mlp},
		{"leaks", mlp},
		{"info", mlp},
		{"trace", mlp},
		{"whatif", mlp},
		{"explain", mlp},
		{"diff", mlp, filepath.Join(snaps, "mlp_train.proto2.pickle")},
		{"ranks", filepath.Join(snaps, "ddp_rank0.pickle"), filepath.Join(snaps, "ddp_rank1.pickle")},
		{"report", "-o", filepath.Join(dir, "r.html"), mlp},
		{"export", "--format", "pprof", "-o", filepath.Join(dir, "p.pb.gz"), mlp},
		{"export", "--format", "parquet", "-o", filepath.Join(dir, "pq"), mlp},
		{"convert", "--format", "json", "-o", filepath.Join(dir, "c.json"), mlp},
		{"stats", filepath.Join(snaps, "monitor_train.stats.jsonl")},
		{"smi", filepath.Join(snaps, "monitor_train.smi.csv")},
	}
	crashed := func(stderr string) bool {
		return strings.Contains(stderr, "fatal error") || strings.Contains(stderr, "goroutine ") ||
			strings.Contains(stderr, "pthread_create") || strings.Contains(stderr, "panic")
	}
	for _, args := range runs {
		t.Run(strings.Join(args[:1], " ")+"/"+filepath.Base(args[len(args)-1]), func(t *testing.T) {
			for range 3 {
				code, stdout, stderr := runUnderAS(t, bin, tightAS, args...)
				if crashed(stderr) {
					t.Fatalf("crashed (exit %d): %.600s", code, stderr)
				}
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				if stdout == "" && args[0] != "report" && args[0] != "export" && args[0] != "convert" {
					t.Fatal("no output")
				}
			}
		})
	}

	big := filepath.Join(dir, "memo_refs.pickle")
	if err := os.WriteFile(big, memoRefsPickle(1_000_000), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runUnderAS(t, bin, 8<<20, "info", big); code != 0 {
		t.Fatalf("under ulimit -v 8 GiB: exit %d: %s", code, stderr)
	}
	for _, c := range []string{"summary", "info", "leaks", "whatif", "report"} {
		args := []string{c, big}
		if c == "report" {
			args = []string{c, "-o", filepath.Join(dir, "big.html"), big}
		}
		code, _, stderr := runUnderAS(t, bin, tightAS, args...)
		if crashed(stderr) {
			t.Fatalf("%s crashed (exit %d): %.600s", c, code, stderr)
		}
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		last := lines[len(lines)-1]
		if code != 1 || !strings.HasPrefix(last, "snapview: "+big+": over the memory limit: ") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and the memory limit's error naming the file", c, code, stderr)
		}
	}
}
