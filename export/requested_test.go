package export

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// TestExportRequestedUnknown: a file whose requested sizes are unknown
// (../shared/snapshots/hostile/requested_gt_size.pickle: a 32 MiB block
// requesting 10^15 bytes) exports no unmarked requested figure: every
// folded line of its device sits under "<requested unknown>" and weighs
// the block's size (so the lines add up to the reserved bytes, with no
// negative "<gaps>"), and the Parquet snapshots row says
// requested_trust "unknown". A file with sane requested sizes keeps
// _memory_viz's lines (TestFoldedMatchesMemviz) and "exact".
func TestExportRequestedUnknown(t *testing.T) {
	hostile := filepath.Join(filepath.Dir(filepath.Dir(sharedDirs(t)[0])), "hostile", "requested_gt_size.pickle")
	for _, tc := range []struct {
		path string
		want stats.Exactness
	}{{hostile, stats.Unknown}, {filepath.Join(sharedDirs(t)[0], "snapshot.pickle"), stats.Exact}} {
		s, err := snapshot.Load(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(filepath.Dir(tc.path)) + "/" + filepath.Base(tc.path)
		var buf bytes.Buffer
		if err := WriteFolded(&buf, s, FileSegments(s), FoldedOptions{}); err != nil {
			t.Fatal(err)
		}
		var sum, reserved int64
		for _, sg := range s.Segments {
			reserved += sg.TotalSize
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		for _, l := range lines {
			n, err := strconv.ParseInt(l[strings.LastIndexByte(l, ' ')+1:], 10, 64)
			if err != nil {
				t.Fatalf("%s: folded line %q: %v", name, l, err)
			}
			sum += n
			if marked := strings.Contains(l, ";<requested unknown>;"); marked != (tc.want == stats.Unknown) {
				t.Errorf("%s: requested %v, folded line %q", name, tc.want, l)
			}
			if n < 0 {
				t.Errorf("%s: folded line %q has a negative weight", name, l)
			}
		}
		if sum != reserved {
			t.Errorf("%s: folded lines add up to %d bytes, the segments to %d", name, sum, reserved)
		}

		var results []*replay.Result
		for _, d := range s.Devices() {
			r, err := replay.Run(s, d, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, r)
		}
		ds := NewDataset(nil)
		if err := ds.Add(s, name, nil, results); err != nil {
			t.Fatal(err)
		}
		tables, err := ds.Tables()
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			if tb.Name != "snapshots" {
				continue
			}
			rows, err := parquet.Read[SnapshotRow](bytes.NewReader(tb.Data), int64(len(tb.Data)))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rows {
				if r.RequestedTrust != tc.want.String() {
					t.Errorf("%s device %d: requested_trust %q, want %q", name, r.Device, r.RequestedTrust, tc.want)
				}
			}
		}
	}
}
