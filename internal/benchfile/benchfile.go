// Package benchfile loads the big snapshot the benchmarks of several
// packages run on.
package benchfile

import (
	"os"
	"testing"

	"github.com/snapview/snapview/snapshot"
)

// Env names the environment variable that holds the path of a big
// snapshot to benchmark on (scripts/bench.sh decompresses the 2M-entry
// one of the shared corpus and sets it; see docs/benchmarks.md).
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
