package html

import (
	"io"
	"testing"

	"github.com/snapview/snapview/internal/benchfile"
)

// BenchmarkBuildHTML builds and writes the report of the file named by
// SNAPVIEW_BENCH_FILE (for example the decompressed
// ../shared/snapshots/big/gpt2_2M_events snapshot; scripts/bench.sh makes
// one): everything `snapview report` does after decoding.
func BenchmarkBuildHTML(b *testing.B) {
	s := benchfile.Load(b)
	b.ReportAllocs()
	for b.Loop() {
		r, err := buildHTML(s, Options{Title: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		if err := Write(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
