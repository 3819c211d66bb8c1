package snapshot

import (
	"os"
	"testing"
)

func TestTmpCount(t *testing.T) {
	f := os.Getenv("TMPFILE")
	if f == "" {
		t.Skip()
	}
	data, _ := os.ReadFile(f)
	m := runMachine(t, data, Limits{})
	t.Logf("taken %d given %d", m.fast.taken, m.fast.given)
}
