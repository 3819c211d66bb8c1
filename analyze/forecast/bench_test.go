package forecast

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ulikunitz/xz"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// The cost of forecasting one target against whatif's one candidate on the
// largest file of the series (resnet50_bs batch 96, 947 KB raw), each from
// the raw pickle to the answer: go test -bench Cost -run '^$'. Each
// reports cpu-ns/op (user + system, from getrusage) besides the wall time.

func rawPickle(b *testing.B, dir string) string {
	b.Helper()
	in, err := os.Open(snapPath(dir))
	if err != nil {
		b.Skip(err)
	}
	defer in.Close()
	r, err := xz.NewReader(in)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(b.TempDir(), filepath.Base(dir)+".pickle")
	out, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, r); err != nil {
		b.Fatal(err)
	}
	out.Close()
	return p
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func loadRaw(b *testing.B, p string) *snapshot.Snapshot {
	s, err := snapshot.Load(p)
	if err != nil {
		b.Fatal(err)
	}
	s, _ = replay.Complete(s)
	return s
}

func resnet(b *testing.B, batch string) string {
	return rawPickle(b, filepath.Join(sharedScaling(b), "resnet50_bs", "batch_"+batch))
}

func BenchmarkCostWhatifOneCandidate(b *testing.B) {
	p := resnet(b, "96")
	b.ResetTimer()
	c0 := cpuTime()
	for range b.N {
		s := loadRaw(b, p)
		if _, err := whatif.Analyze(s, 0, nil, whatif.Options{Confs: []string{"expandable_segments:True"}, Parallel: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

func benchForecast(b *testing.B, x, y string, vx, vy, to int64) {
	px, py := resnet(b, x), resnet(b, y)
	b.ResetTimer()
	c0 := cpuTime()
	for range b.N {
		files := []File{{Name: "x", Value: vx, Snap: loadRaw(b, px)}, {Name: "y", Value: vy, Snap: loadRaw(b, py)}}
		if _, err := Run(files, Options{Targets: []int64{to}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkCostForecast8And16To96(b *testing.B)   { benchForecast(b, "8", "16", 8, 16, 96) }
func BenchmarkCostForecast64And96To128(b *testing.B) { benchForecast(b, "64", "96", 64, 96, 128) }

// BenchmarkAlign aligns resnet50_bs batch 64 with batch 96 (3,634 and
// 3,712 requests).
func BenchmarkAlign(b *testing.B) {
	root := filepath.Join(sharedScaling(b), "resnet50_bs")
	files := []File{{Name: "64", Value: 64, Snap: load(b, filepath.Join(root, "batch_64"))}, {Name: "96", Value: 96, Snap: load(b, filepath.Join(root, "batch_96"))}}
	f := &forecaster{aligns: map[[2]int][]int32{}, models: map[string]*model{}}
	intern := map[string]int32{}
	for i := range files {
		sq, err := prepare(&files[i], 0, intern)
		if err != nil {
			b.Fatal(err)
		}
		f.seqs = append(f.seqs, sq)
	}
	b.ResetTimer()
	c0 := cpuTime()
	for range b.N {
		clear(f.aligns)
		f.alignment(0, 1)
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

// BenchmarkCostForecastGPT2 forecasts gpt2_bs batch 24 from batch 1 and 2
// (above both files: with a band), against whatif's one candidate on
// batch 24 (BenchmarkCostWhatifGPT2).
func BenchmarkCostForecastGPT2(b *testing.B) {
	root := filepath.Join(sharedScaling(b), "gpt2_bs")
	px, py := rawPickle(b, filepath.Join(root, "batch_1")), rawPickle(b, filepath.Join(root, "batch_2"))
	b.ResetTimer()
	c0 := cpuTime()
	for range b.N {
		files := []File{{Name: "x", Value: 1, Snap: loadRaw(b, px)}, {Name: "y", Value: 2, Snap: loadRaw(b, py)}}
		if _, err := Run(files, Options{Targets: []int64{24}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkCostWhatifGPT2(b *testing.B) {
	p := rawPickle(b, filepath.Join(sharedScaling(b), "gpt2_bs", "batch_24"))
	b.ResetTimer()
	c0 := cpuTime()
	for range b.N {
		s := loadRaw(b, p)
		if _, err := whatif.Analyze(s, 0, nil, whatif.Options{Confs: []string{"expandable_segments:True"}, Parallel: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-c0)/float64(b.N), "cpu-ns/op")
}
