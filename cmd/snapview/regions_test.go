package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestLeaksCompiledRegions: on the real torch.compile recording
// (testdata/snapshots/compiled_regions, compile_context=True) each leaks
// group names the compiled regions its live bytes were allocated in, in
// text and JSON, and its stack names inductor's generated file by its
// region; an eager recording has no region anywhere.
func TestLeaksCompiledRegions(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "snapshots", "compiled_regions", "snapshot.pickle.xz")
	out, _, err := runSnapview(t, "leaks", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"in Torch-Compiled Region: 0/0 (32.0 MiB)", "Torch-Compiled Region 0/0 (inductor cfypgnls….py):380 call"} {
		if !strings.Contains(out, want) {
			t.Errorf("leaks text lacks %q:\n%s", want, out)
		}
	}
	jout, _, err := runSnapview(t, "leaks", "--json", file)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Groups []struct {
			Bytes   int64 `json:"bytes"`
			Regions []struct {
				Region string `json:"region"`
				Bytes  int64  `json:"bytes"`
			} `json:"regions"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(jout), &js); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range js.Groups {
		var sum int64
		for _, r := range g.Regions {
			if !strings.HasPrefix(r.Region, "Torch-Compiled Region: ") {
				t.Errorf("region %q", r.Region)
			}
			sum += r.Bytes
		}
		if sum > g.Bytes {
			t.Errorf("regions hold %d of a group of %d bytes", sum, g.Bytes)
		}
		if len(g.Regions) > 0 {
			n++
		}
	}
	if n == 0 {
		t.Error("no group names a region")
	}
	eager, _, err := runSnapview(t, "leaks", "--json", filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(eager, `"regions"`) {
		t.Error("an eager recording has regions")
	}
}
