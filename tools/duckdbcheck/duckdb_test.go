// Package duckdbcheck checks that DuckDB reads the Parquet dataset of
// `snapview export --format parquet` and that SQL over it reproduces
// snapview's own figures: the peak of allocated bytes per device, and the
// bytes live at the peak per allocation stack. It is a module of its own
// because DuckDB needs cgo: the snapview binary stays pure Go.
//
//	cd tools/duckdbcheck && go test .
package duckdbcheck

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/export"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// PeakSQL is the README's query: the peak of allocated bytes per file and
// device, as a running sum over the allocations table (a block allocated
// before the trace counts from entry 0; free_entry is free_requested, when
// allocated_bytes drops).
const PeakSQL = `
WITH deltas AS (
  SELECT file_id, device, coalesce(alloc_entry, 0) AS entry, size AS delta FROM 'DIR/allocations.parquet'
  UNION ALL
  SELECT file_id, device, free_entry, -size FROM 'DIR/allocations.parquet' WHERE free_entry IS NOT NULL
), steps AS (
  SELECT file_id, device, entry, sum(delta) AS delta FROM deltas GROUP BY ALL
), running AS (
  SELECT file_id, device, sum(delta) OVER (PARTITION BY file_id, device ORDER BY entry) AS allocated FROM steps
)
SELECT file_id, device, max(allocated) AS peak FROM running GROUP BY ALL ORDER BY ALL`

// StacksSQL is the README's other query: the bytes live at each
// device's peak by allocation stack (the peak entry from the snapshots
// table), with the stack's innermost user frame.
const StacksSQL = `
SELECT a.file_id, a.device, a.stack_id, sum(a.size) AS bytes, any_value(f.filename || ':' || f.line || ' ' || f.name) AS frame
FROM 'DIR/allocations.parquet' a
JOIN 'DIR/snapshots.parquet' s USING (file_id, device)
LEFT JOIN (SELECT file_id, stack_id, arg_min(filename, depth) AS filename, arg_min(line, depth) AS line, arg_min(name, depth) AS name
           FROM 'DIR/stacks.parquet' WHERE kind = 'user' GROUP BY ALL) f USING (file_id, stack_id)
WHERE coalesce(a.alloc_entry, -1) <= s.peak_entry AND (a.free_entry IS NULL OR a.free_entry > s.peak_entry)
GROUP BY ALL ORDER BY bytes DESC`

// sharedDirs returns the torch 2.11 folders of the shared corpus (all 17),
// or ends the test when the corpus is absent (see internal/corpus).
func sharedDirs(t *testing.T) []string {
	t.Helper()
	return corpus.Glob(t, "torch2.11/*", 17)
}

type key struct{ file, dev int }

func TestDuckDBReproducesPeakAndStacks(t *testing.T) {
	files := []string{}
	for _, d := range sharedDirs(t) {
		files = append(files, filepath.Join(d, "snapshot.pickle"))
	}
	if big := os.Getenv("SNAPVIEW_BENCH_FILE"); big != "" {
		files = append(files, big)
	}
	ds := export.NewDataset([]string{"job"})
	wantPeak := map[key]int64{}
	wantStacks := map[key]map[int64]int64{}
	for i, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		var results []*replay.Result
		for _, d := range s.Devices() {
			r, err := replay.Run(s, d, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
			if r.PeakIndex < 0 {
				continue
			}
			k := key{i, d}
			wantPeak[k] = r.Allocated[r.PeakIndex]
			st, err := r.StateAt(r.PeakIndex)
			if err != nil {
				t.Fatal(err)
			}
			wantStacks[k] = map[int64]int64{}
			for _, sg := range st.Segments {
				for _, b := range sg.Blocks {
					if b.State == snapshot.StateActiveAllocated {
						wantStacks[k][int64(b.Stack)] += b.Size
					}
				}
			}
		}
		if err := ds.Add(s, f, []export.Label{{Key: "job", Value: "duckdbcheck"}}, results); err != nil {
			t.Fatal(err)
		}
	}
	tables, err := ds.Tables()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tb := range tables {
		if err := os.WriteFile(filepath.Join(dir, tb.Name+".parquet"), tb.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := func(query string) *sql.Rows {
		t.Helper()
		rows, err := db.Query(replaceDir(query, dir))
		if err != nil {
			t.Fatalf("%v\n%s", err, query)
		}
		return rows
	}

	rows := q(PeakSQL)
	gotPeak := map[key]int64{}
	for rows.Next() {
		var f, d int
		var peak int64
		if err := rows.Scan(&f, &d, &peak); err != nil {
			t.Fatal(err)
		}
		gotPeak[key{f, d}] = peak
	}
	rows.Close()
	for k, want := range wantPeak {
		if gotPeak[k] != want {
			t.Errorf("%s device %d: SQL peak %d, snapview %d", files[k.file], k.dev, gotPeak[k], want)
		}
	}

	rows = q(StacksSQL)
	gotStacks := map[key]map[int64]int64{}
	n := 0
	for rows.Next() {
		var f, d int
		var stack, bytes int64
		var frame sql.NullString
		if err := rows.Scan(&f, &d, &stack, &bytes, &frame); err != nil {
			t.Fatal(err)
		}
		k := key{f, d}
		if gotStacks[k] == nil {
			gotStacks[k] = map[int64]int64{}
		}
		gotStacks[k][stack] = bytes
		n++
	}
	rows.Close()
	for k, want := range wantStacks {
		if len(gotStacks[k]) != len(want) {
			t.Errorf("%s device %d: SQL has %d stacks at the peak, snapview %d", files[k.file], k.dev, len(gotStacks[k]), len(want))
		}
		for sid, b := range want {
			if gotStacks[k][sid] != b {
				t.Errorf("%s device %d stack %d: SQL %d bytes, snapview %d", files[k.file], k.dev, sid, gotStacks[k][sid], b)
			}
		}
	}
	t.Logf("%d files, %d device peaks and %d (device, stack) totals compared", len(files), len(wantPeak), n)

	var label string
	if err := db.QueryRow(replaceDir(`SELECT DISTINCT job FROM 'DIR/snapshots.parquet'`, dir)).Scan(&label); err != nil || label != "duckdbcheck" {
		t.Errorf("label column job: %q, %v", label, err)
	}
}

func replaceDir(q, dir string) string { return strings.ReplaceAll(q, "DIR", dir) }
