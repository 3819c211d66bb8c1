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

// TestTraceUserMetadata: trace shows an entry's user_metadata (the label
// torch.cuda.memory._set_memory_metadata sets, which an annotate entry
// also carries): on compiled_regions the optimizer step's 178 entries
// carry "optimizer" in the text, and entries 2260 to 2300 (32 of them)
// in the JSON; an entry without one shows none.
func TestTraceUserMetadata(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "snapshots", "compiled_regions", "snapshot.pickle.xz")
	out, _, err := runSnapview(t, "trace", file)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "  [optimizer]\n"); n != 178 {
		t.Errorf("%d text lines end in [optimizer], want 178", n)
	}
	// The JSON of every entry is 1.3 GB (each entry with its frames,
	// 23 s of CPU): entries 2260 to 2300, 32 of them [optimizer] in the
	// text, stand for the rest.
	jout, _, err := runSnapview(t, "trace", "--json", "--from", "entry:2260", "--to", "entry:2300", file)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Entries []struct {
			UserMetadata *string `json:"user_metadata"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(jout), &js); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range js.Entries {
		if e.UserMetadata != nil {
			if *e.UserMetadata != "optimizer" {
				t.Errorf("user_metadata %q", *e.UserMetadata)
			}
			n++
		}
	}
	if n != 32 || len(js.Entries) != 41 {
		t.Errorf("%d of %d entries with user_metadata, want 32 of 41", n, len(js.Entries))
	}
}
