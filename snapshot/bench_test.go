package snapshot

import (
	"os"
	"runtime"
	"testing"
)

// BenchmarkLoadLarge decodes the file named by SNAPVIEW_BENCH_FILE (for
// example the decompressed ../shared/snapshots/big/gpt2_2M_events
// snapshot; scripts/bench.sh makes it).
func BenchmarkLoadLarge(b *testing.B) {
	f := os.Getenv("SNAPVIEW_BENCH_FILE")
	if f == "" {
		b.Skip("set SNAPVIEW_BENCH_FILE to a large snapshot")
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Load(f)
		if err != nil {
			b.Fatal(err)
		}
		runtime.KeepAlive(s)
	}
}
