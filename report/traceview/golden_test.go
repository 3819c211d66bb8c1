package traceview

import (
	"flag"
	"testing"

	"github.com/snapview/snapview/internal/golden"
)

var update = flag.Bool("update", false, "update golden files under testdata/")

// checkGolden compares got with the golden file at path (with -update,
// writes it).
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	golden.Check(t, path, got, *update)
}
