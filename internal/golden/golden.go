// Package golden compares a test's output with its golden file, the
// pattern of the packages whose goldens live under testdata/ and are
// rewritten with go test -update.
package golden

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Check compares got with the golden file at path, failing t with the
// difference (-want +got); with update it writes got there instead. A
// missing file fails t and says how to create it.
func Check(t testing.TB, path, got string, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
