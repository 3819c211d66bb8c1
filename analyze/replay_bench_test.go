package analyze

import (
	"flag"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

var largeSnapshot = flag.String("large_snapshot", "", "path of a big snapshot (e.g. the decompressed gpt2_2M_events) for BenchmarkReplay")

// BenchmarkReplay replays device 0 of -large_snapshot, or of a synthetic
// trace when the flag is not set.
func BenchmarkReplay(b *testing.B) {
	var s *snapshot.Snapshot
	if *largeSnapshot != "" {
		var err error
		s, err = snapshot.Load(*largeSnapshot)
		if err != nil {
			b.Fatal(err)
		}
	} else {
		s = syntheticChurn(200000)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		r, err := Replay(s, 0)
		if err != nil {
			b.Fatal(err)
		}
		if !r.Check.Equal {
			b.Fatalf("end check: %v", r.Check.Differences)
		}
	}
}
