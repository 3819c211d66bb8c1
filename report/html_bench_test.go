package report

import (
	"io"
	"os"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// BenchmarkBuildHTML builds and writes the report of the file named by
// SNAPVIEW_BENCH_FILE (for example the decompressed
// ../shared/snapshots/big/gpt2_2M_events snapshot; scripts/bench.sh makes
// one): everything `snapview report` does after decoding.
func BenchmarkBuildHTML(b *testing.B) {
	path := os.Getenv("SNAPVIEW_BENCH_FILE")
	if path == "" {
		b.Skip("set SNAPVIEW_BENCH_FILE to a large snapshot")
	}
	s, err := snapshot.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := BuildHTML(s, HTMLOptions{Title: path})
		if err != nil {
			b.Fatal(err)
		}
		if err := WriteHTML(io.Discard, r); err != nil {
			b.Fatal(err)
		}
	}
}
