// Package benchfile loads the big snapshot the benchmarks of several
// packages run on.
package benchfile

import (
	"os"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// Env names the environment variable that holds the path of the big
// snapshot (e.g. the decompressed ../shared/snapshots/big/gpt2_2M_events
// snapshot; scripts/bench.sh makes one).
const Env = "SNAPVIEW_BENCH_FILE"

// Load decodes the snapshot $SNAPVIEW_BENCH_FILE names, and skips b when
// the variable is unset; a file that does not decode fails b.
func Load(b testing.TB) *snapshot.Snapshot {
	b.Helper()
	path := os.Getenv(Env)
	if path == "" {
		b.Skip("set " + Env + " to a large snapshot")
	}
	s, err := snapshot.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
