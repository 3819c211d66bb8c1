package export

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/snapshot"
)

func readTable[T any](t *testing.T, tables []Table, name string) []T {
	t.Helper()
	for _, tb := range tables {
		if tb.Name == name {
			rows, err := parquet.Read[T](bytes.NewReader(tb.Data), int64(len(tb.Data)))
			if err != nil {
				t.Fatalf("reading %s back: %v", name, err)
			}
			return rows
		}
	}
	t.Fatalf("no table %s", name)
	return nil
}

type devKey struct{ file, dev int32 }

// TestParquetReadBack writes every torch 2.11 recording into one dataset,
// reads the tables back with parquet-go and recomputes from the rows, as
// the README's SQL does: the peak of allocated bytes (a running sum over
// the allocations table), the bytes live at the peak per stack (against
// the replayed state), and the events' and segments' figures.
func TestParquetReadBack(t *testing.T) {
	dirs := sharedDirs(t)
	ds := NewDataset([]string{"job", "Rank"})
	type dev struct {
		s *snapshot.Snapshot
		r *replay.Result
	}
	devs := map[devKey]dev{}
	var snaps []*snapshot.Snapshot
	for i, dir := range dirs {
		s := loadShared(t, dir)
		snaps = append(snaps, s)
		var results []*replay.Result
		for _, d := range s.Devices() {
			r, err := replay.Run(s, d, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
			devs[devKey{int32(i), int32(d)}] = dev{s, r}
		}
		if err := ds.Add(s, filepath.Base(dir), []Label{{"job", "ci"}, {"Rank", strconv.Itoa(i)}}, results); err != nil {
			t.Fatal(err)
		}
	}
	tables, err := ds.Tables()
	if err != nil {
		t.Fatal(err)
	}
	allocs := readTable[AllocationRow](t, tables, "allocations")
	events := readTable[EventRow](t, tables, "events")
	segs := readTable[SegmentRow](t, tables, "segments")
	blocks := readTable[BlockRow](t, tables, "blocks")
	stacks := readTable[StackRow](t, tables, "stacks")

	// Peak: the running sum of +size at alloc_entry (-1 before the trace)
	// and -size at free_entry, highest after any entry.
	delta := map[devKey]map[int64]int64{}
	for _, a := range allocs {
		k := devKey{a.FileID, a.Device}
		if delta[k] == nil {
			delta[k] = map[int64]int64{}
		}
		at := int64(-1)
		if a.AllocEntry != nil {
			at = *a.AllocEntry
		}
		delta[k][at] += a.Size
		if a.FreeEntry != nil {
			delta[k][*a.FreeEntry] -= a.Size
		}
	}
	maxAlloc := map[devKey]int64{}
	for _, e := range events {
		k := devKey{e.FileID, e.Device}
		maxAlloc[k] = max(maxAlloc[k], e.Allocated)
	}
	for k, d := range devs {
		r := d.r
		if r.PeakIndex < 0 {
			continue
		}
		run, peak := delta[k][-1], int64(0)
		for i := range int64(len(r.Allocated)) {
			run += delta[k][i]
			peak = max(peak, run)
			if run != r.Allocated[i] {
				t.Fatalf("file %d device %d: running sum after entry %d = %d, replay %d", k.file, k.dev, i, run, r.Allocated[i])
			}
		}
		if want := r.Allocated[r.PeakIndex]; peak != want || maxAlloc[k] != want {
			t.Errorf("file %d device %d: peak from allocations %d, from events %d, want %d", k.file, k.dev, peak, maxAlloc[k], want)
		}

		// Per stack at the peak.
		st, err := r.StateAt(r.PeakIndex)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int32]int64{}
		for _, sg := range st.Segments {
			for _, b := range sg.Blocks {
				if b.State == snapshot.StateActiveAllocated {
					want[int32(b.Stack)] += b.Size
				}
			}
		}
		got := map[int32]int64{}
		p := int64(r.PeakIndex)
		for _, a := range allocs {
			if a.FileID != k.file || a.Device != k.dev {
				continue
			}
			if (a.AllocEntry == nil || *a.AllocEntry <= p) && (a.FreeEntry == nil || *a.FreeEntry > p) {
				got[a.StackID] += a.Size
			}
		}
		if len(got) != len(want) {
			t.Errorf("file %d device %d: %d stacks live at the peak, want %d", k.file, k.dev, len(got), len(want))
		}
		for sid, v := range want {
			if got[sid] != v {
				t.Errorf("file %d device %d: stack %d: %d bytes at the peak, want %d", k.file, k.dev, sid, got[sid], v)
			}
		}
	}

	nseg, nblk, nframes := 0, 0, 0
	for _, s := range snaps {
		nseg += len(s.Segments)
		for _, sg := range s.Segments {
			nblk += len(sg.Blocks)
		}
		for _, st := range s.Stacks {
			nframes += len(st)
		}
	}
	if len(segs) != nseg || len(blocks) != nblk || len(stacks) != nframes {
		t.Errorf("segments %d, blocks %d, stack frames %d; want %d, %d, %d", len(segs), len(blocks), len(stacks), nseg, nblk, nframes)
	}

	// The snapshots table has a column per label.
	for _, tb := range tables {
		if tb.Name != "snapshots" {
			continue
		}
		f, err := parquet.OpenFile(bytes.NewReader(tb.Data), int64(len(tb.Data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, col := range []string{"job", "Rank", "peak_allocated", "peak_trust"} {
			if _, ok := f.Schema().Lookup(col); !ok {
				t.Errorf("snapshots has no column %s: %v", col, f.Schema())
			}
		}
		if f.NumRows() < int64(len(dirs)) {
			t.Errorf("snapshots has %d rows for %d files", f.NumRows(), len(dirs))
		}
		type labelled struct {
			FileID int32  `parquet:"file_id"`
			Job    string `parquet:"job"`
			Rank   string `parquet:"Rank"`
		}
		rows, err := parquet.Read[labelled](bytes.NewReader(tb.Data), int64(len(tb.Data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.Job != "ci" || r.Rank != strconv.Itoa(int(r.FileID)) {
				t.Errorf("snapshots row of file %d: job %q, Rank %q", r.FileID, r.Job, r.Rank)
			}
		}
	}
}
