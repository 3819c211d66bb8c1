package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rankTree writes the ddp pair of testdata/snapshots (gpurec.py: rank 1
// keeps 64 MiB more) under dir at the given paths: rank0 and rank1 are
// copied by the rank each path's name gives.
func rankTree(t *testing.T, paths map[string]int) string {
	t.Helper()
	dir := t.TempDir()
	for rel, rank := range paths {
		src := filepath.Join("..", "..", "testdata", "snapshots", []string{"ddp_rank0.pickle", "ddp_rank1.pickle"}[rank])
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestRanksDirLayouts: ranks DIR reads the layouts frameworks write one
// file per rank in, recursively, with rank and step from the names:
// torchtitan's iteration_N[_exit]/rankR_memory_snapshot.pickle and its
// newer step_N/RRRRRR_step_N.pickle (several steps: compared step by
// step, an exit dump after its step), Megatron-Bridge's
// memory_trace_R.pickle, and names that give a world size (the missing
// ranks named); a lone rank 0 is said to be alone.
func TestRanksDirLayouts(t *testing.T) {
	titan := rankTree(t, map[string]int{
		"memory_snapshot/iteration_10/rank0_memory_snapshot.pickle":      0,
		"memory_snapshot/iteration_10/rank1_memory_snapshot.pickle":      1,
		"memory_snapshot/iteration_20/rank0_memory_snapshot.pickle":      0,
		"memory_snapshot/iteration_20/rank1_memory_snapshot.pickle":      1,
		"memory_snapshot/iteration_20_exit/rank0_memory_snapshot.pickle": 0,
		"memory_snapshot/README.md":                                      0, // not a snapshot: skipped
	})
	out, _, err := runSnapview(t, "ranks", titan)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"== step 10: 2 files ==", "== step 20: 2 files ==", "== step 20 (exit dump): 1 file ==",
		"note: only rank 0's file is here; the names do not tell the world size"} {
		if !strings.Contains(out, want) {
			t.Errorf("torchtitan tree: no %q in\n%s", want, out)
		}
	}
	if i, j := strings.Index(out, "== step 20: "), strings.Index(out, "== step 20 (exit dump)"); i < 0 || j < i {
		t.Errorf("the exit dump does not follow its step")
	}
	jout, _, err := runSnapview(t, "ranks", "--json", titan)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Steps []struct {
			Step       *int     `json:"step"`
			Exit       bool     `json:"exit"`
			Files      []string `json:"files"`
			Comparison struct {
				Ranks []struct {
					Rank          *int  `json:"rank"`
					PeakAllocated int64 `json:"peak_allocated_bytes"`
				} `json:"ranks"`
			} `json:"comparison"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(jout), &js); err != nil {
		t.Fatalf("--json: %v\n%s", err, jout)
	}
	if len(js.Steps) != 3 || *js.Steps[0].Step != 10 || *js.Steps[2].Step != 20 || !js.Steps[2].Exit {
		t.Fatalf("--json steps: %+v", js.Steps)
	}
	for _, st := range js.Steps {
		for i, r := range st.Comparison.Ranks {
			if r.Rank == nil || *r.Rank != i {
				t.Errorf("step %d: rank %d of the comparison is %v", *st.Step, i, r.Rank)
			}
		}
	}
	// rank 1 keeps 64 MiB more at its peak: the comparison is of ranks.
	if r := js.Steps[0].Comparison.Ranks; len(r) != 2 || r[1].PeakAllocated-r[0].PeakAllocated != 64<<20 {
		t.Errorf("step 10: ranks %+v, want rank 1 64 MiB over rank 0", r)
	}

	newTitan := rankTree(t, map[string]int{
		"step_000000000010/000000_step_10.pickle": 0,
		"step_000000000010/000001_step_10.pickle": 1,
		"step_000000000011/000000_step_11.pickle": 0,
		"step_000000000011/000001_step_11.pickle": 1,
	})
	out, _, err = runSnapview(t, "ranks", newTitan)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "== step 10: 2 files ==") || !strings.Contains(out, "== step 11: 2 files ==") ||
		!strings.Contains(out, "|    0 | 000000_step_10.pickle") || !strings.Contains(out, "|  1 ! | 000001_step_10.pickle") {
		t.Errorf("torchtitan step_N tree:\n%s", out)
	}

	megatron := rankTree(t, map[string]int{"memory_trace_0.pickle": 0, "memory_trace_1.pickle": 1})
	out, errOut, err := runSnapview(t, "ranks", megatron)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "== ") || !strings.Contains(out, "|    0 | memory_trace_0.pickle") || strings.Contains(errOut, "missing") {
		t.Errorf("Megatron-Bridge names:\n%s\n%s", out, errOut)
	}

	world := rankTree(t, map[string]int{"snap_rank0_of_4.pickle": 0, "snap_rank1_of_4.pickle": 1})
	_, errOut, err = runSnapview(t, "ranks", world)
	if err != nil {
		t.Fatal(err)
	}
	if want := "note: 2 ranks of a world of 4 (the file names give its size) missing: 2, 3"; !strings.Contains(errOut, want) {
		t.Errorf("world size from the names: stderr %q lacks %q", errOut, want)
	}
}
