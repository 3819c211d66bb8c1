package whatif

import (
	"syscall"
	"testing"
	"time"

	"github.com/snapview/snapview/analyze/allocator"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/benchfile"
)

// BenchmarkWhatif compares one candidate's simulation with the replay
// summary runs (replay.Run, StatsOnly), on $SNAPVIEW_BENCH_FILE (an absolute
// path, e.g. the decompressed big/gpt2_2M_events snapshot; skipped when
// unset). compile is the per-file preparation the simulations share.
func BenchmarkWhatif(b *testing.B) {
	s := benchfile.Load(b)
	n := len(s.Traces[0])
	r, err := replay.Run(s, 0, replay.Options{Mode: replay.StatsOnly})
	if err != nil {
		b.Fatal(err)
	}
	own := allocator.FromSettings(s.Settings)
	p := compile(s, r, own, 0)
	// The machine may be shared: next to the wall time, report the
	// process's CPU time (user + system) per run, which other loads
	// disturb less.
	var cpu0 time.Duration
	perEntry := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
	}
	b.Run("replay_stats", func(b *testing.B) {
		cpu0 = cpuTime()
		for b.Loop() {
			if _, err := replay.Run(s, 0, replay.Options{Mode: replay.StatsOnly}); err != nil {
				b.Fatal(err)
			}
		}
		perEntry(b)
	})
	b.Run("compile", func(b *testing.B) {
		cpu0 = cpuTime()
		for b.Loop() {
			compile(s, r, own, 0)
		}
		perEntry(b)
	})
	for _, conf := range []string{"", "expandable_segments:True", "max_split_size_mb:128", "roundup_power2_divisions:4"} {
		cfg, _ := allocator.Parse(conf)
		b.Run("simulate_"+conf, func(b *testing.B) {
			cpu0 = cpuTime()
			for b.Loop() {
				newSim(p, cfg, 0, nil).run()
			}
			perEntry(b)
		})
	}
	// The cap interval's search: a cap interval below the peak the file's
	// settings reach with no cap (90% to 95% of it), each setting run at
	// the lower bound with its checkpoint, then searchCap; compare its
	// cpu-ms/op with simulate_ (the issue asks at most 3x).
	peak := newSim(p, own, 0, nil).run().PeakReserved
	lo, hi := peak/10*9, peak/20*19
	for _, conf := range []string{"", "expandable_segments:True", "max_split_size_mb:128"} {
		cfg, _ := allocator.Parse(conf)
		b.Run("interval_"+conf, func(b *testing.B) {
			cpu0 = cpuTime()
			var f CapFit
			for b.Loop() {
				sm := newSim(p, cfg, lo, nil)
				sm.ckptOn = true
				out := sm.run()
				f = searchCap(sm, out, lo, hi, searchBudget(len(p.ops)))
			}
			perEntry(b)
			b.ReportMetric(float64(f.Ops)/float64(len(p.ops)), "extra-runs")
		})
	}
	b.Run("selfcheck", func(b *testing.B) {
		cpu0 = cpuTime()
		for b.Loop() {
			chk := newChecker(p)
			sm := newSim(p, own, 0, chk)
			chk.s = sm
			chk.finish(sm.run())
		}
		perEntry(b)
	})
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkAnalyze runs Analyze on device 0 of $SNAPVIEW_BENCH_FILE from
// its replay: the self-check and every candidate, one at a time
// (Parallel 1, so that cpu-ms/op is the work of one run of them all).
func BenchmarkAnalyze(b *testing.B) {
	s := benchfile.Load(b)
	r, err := replay.Run(s, 0, replay.Options{Mode: replay.StatsOnly})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := Analyze(s, 0, r, Options{Parallel: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
}
