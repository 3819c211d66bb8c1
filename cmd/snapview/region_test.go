package main

import (
	"strings"
	"testing"
)

// TestLeaksByRegionFlag: leaks --by region groups the torch.compile
// recording by compiled region; a bad --by value and --by region with
// --by-annotation are usage errors.
func TestLeaksByRegionFlag(t *testing.T) {
	const file = "../../testdata/snapshots/compiled_regions/snapshot.pickle.xz"
	out, errOut, err := runSnapview(t, "leaks", "--by", "region", file)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, want := range []string{"3 groups by compiled region (--by region)", "region: Torch-Compiled Region: 0/0",
		"region: Torch-Compiled Region: 1/0", "region: (outside compiled regions)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"leaks", "--by", "frame", file}, {"leaks", "--by", "region", "--by-annotation", file}} {
		if _, errOut, err := runSnapview(t, args...); err == nil || !strings.Contains(err.Error()+errOut, "--by") {
			t.Errorf("%v: err %v, stderr %q; want a usage error naming --by", args, err, errOut)
		}
	}
}
