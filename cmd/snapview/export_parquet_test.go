package main

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parquetTableNames are the tables export --format parquet writes.
var parquetTableNames = []string{"allocations", "blocks", "events", "segments", "snapshots", "stacks"}

// readDir returns the files of dir by name with their contents.
func readDir(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if e.IsDir() {
			out[e.Name()+"/"] = nil
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// TestExportParquetStaged: a Parquet export that fails partway leaves
// the folder as it was, with no temporary folder beside it: a new folder
// is not created, and an existing one keeps the tables of its last whole
// export (before, a table that could not be written left the tables
// before it from the new run beside the older ones after it).
func TestExportParquetStaged(t *testing.T) {
	dir := t.TempDir()
	snaps := filepath.Join("..", "..", "testdata", "snapshots")
	a, b := filepath.Join(snaps, "mlp_train.pickle"), filepath.Join(snaps, "leak_cycle.pickle")
	out := filepath.Join(dir, "ds")

	// A failure (a file that does not decode) before the folder exists.
	bad := filepath.Join(dir, "bad.pickle")
	if err := os.WriteFile(bad, []byte("\x80\x04}(garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runSnapview(t, "export", "--format", "parquet", "-o", out, a, bad); err == nil {
		t.Fatal("export of an undecodable file: no error")
	}
	if got := readDir(t, dir); len(got) != 1 {
		t.Fatalf("after a failed export into a new folder, %s holds %v; want only bad.pickle", dir, slices.Sorted(maps.Keys(got)))
	}

	// A whole export, then one that fails at its third table.
	if _, _, err := runSnapview(t, "export", "--format", "parquet", "-o", out, a); err != nil {
		t.Fatal(err)
	}
	first := readDir(t, out)
	for _, n := range parquetTableNames {
		if len(first[n+".parquet"]) == 0 {
			t.Fatalf("%s.parquet not written: %v", n, slices.Sorted(maps.Keys(first)))
		}
	}
	if err := os.Remove(filepath.Join(out, "events.parquet")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(out, "events.parquet"), 0o755); err != nil {
		t.Fatal(err)
	}
	before := readDir(t, out)
	_, _, err := runSnapview(t, "export", "--format", "parquet", "-o", out, b)
	if err == nil || !strings.Contains(err.Error(), "events.parquet") {
		t.Fatalf("export over a folder named events.parquet: error %v, want one naming it", err)
	}
	after := readDir(t, out)
	for name, data := range before {
		if !bytes.Equal(after[name], data) {
			t.Errorf("%s changed by the failed export", name)
		}
	}
	if len(after) != len(before) {
		t.Errorf("the failed export left %v, had %v", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
	}
	if got := readDir(t, dir); len(got) != 2 {
		t.Errorf("%s holds %v after the failed export; want bad.pickle and ds/ (no temporary folder)", dir, slices.Sorted(maps.Keys(got)))
	}

	// The next whole export replaces every table.
	if err := os.Remove(filepath.Join(out, "events.parquet")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runSnapview(t, "export", "--format", "parquet", "-o", out, b); err != nil {
		t.Fatal(err)
	}
	second := readDir(t, out)
	for _, n := range parquetTableNames {
		if bytes.Equal(second[n+".parquet"], first[n+".parquet"]) {
			t.Errorf("%s.parquet is the first export's", n)
		}
	}
}
