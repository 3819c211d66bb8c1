package replay

import (
	"flag"
	"github.com/snapview/snapview/analyze/allocator"
	"os"
	"syscall"
	"testing"
	"time"

	. "github.com/snapview/snapview/analyze/internal/testsnap"

	"github.com/snapview/snapview/snapshot"
)

var largeSnapshot = flag.String("large_snapshot", "", "path of a big snapshot (e.g. the decompressed gpt2_2M_events) for the replay benchmarks; default $SNAPVIEW_BENCH_FILE")

// benchSnapshot loads -large_snapshot (or $SNAPVIEW_BENCH_FILE, as
// snapshot's BenchmarkLoadLarge reads; scripts/bench.sh makes one), or
// builds a synthetic trace when neither is set.
func benchSnapshot(b *testing.B) *snapshot.Snapshot {
	b.Helper()
	path := *largeSnapshot
	if path == "" {
		path = os.Getenv("SNAPVIEW_BENCH_FILE")
	}
	if path == "" {
		return SyntheticChurn(200000)
	}
	s, err := snapshot.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkReplay replays device 0 of the benchmark snapshot, with the
// per-entry series and allocations (what leaks and report use).
func BenchmarkReplay(b *testing.B) {
	benchReplay(b, Options{})
}

// BenchmarkReplayStats replays device 0 for the end figures only (what
// summary uses).
func BenchmarkReplayStats(b *testing.B) {
	benchReplay(b, Options{Mode: StatsOnly})
}

func benchReplay(b *testing.B, opt Options) {
	s := benchSnapshot(b)
	n := len(DeviceTrace(s, 0))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Run(s, 0, opt)
		if err != nil {
			b.Fatal(err)
		}
		if !r.Check.Equal {
			b.Fatalf("end check: %v", r.Check.Differences)
		}
	}
	// Time per trace entry stays flat when the replay is linear.
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
}

// BenchmarkInferRounding reads the rounding rule of the benchmark
// snapshot from its blocks and device 0's trace (what each replay does
// first).
func BenchmarkInferRounding(b *testing.B) {
	s := benchSnapshot(b)
	n := len(DeviceTrace(s, 0))
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		allocator.InferRounding(s, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
	// The machine may be shared: the process's CPU time (user + system)
	// per run, which other loads disturb less than the wall time.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e3, "cpu-us/op")
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
