package replay_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/report"
	"github.com/snapview/snapview/snapshot"
)

// TestReplayTorchTable is the golden test of the whole memory_summary()
// table: on every snapshot of ../shared/snapshots/torch2.11 recorded from
// the first allocation (meta.json ground_truth.recorded_from_start), the
// table printed from the replayed figures equals torch's summary.txt cell
// for cell, except "cudaMalloc retries", which the replay only bounds from
// below. On the other snapshots with a trace, every cell that is not
// marked ("?" or "+") equals torch's.
func TestReplayTorchTable(t *testing.T) {
	dirs := corpus.Glob(t, "torch2.11/*", 17)
	var matched, total, exactFiles int
	for _, d := range dirs {
		meta, err := os.ReadFile(filepath.Join(d, "meta.json"))
		if err != nil {
			meta, err = os.ReadFile(filepath.Join(d, "snapshot.meta.json"))
		}
		if err != nil {
			continue
		}
		var m struct {
			GroundTruth struct {
				RecordedFromStart *bool `json:"recorded_from_start"`
			} `json:"ground_truth"`
		}
		if err := json.Unmarshal(meta, &m); err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Load(filepath.Join(d, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range s.Devices() {
			if dev >= len(s.Traces) || len(s.Traces[dev]) == 0 {
				continue
			}
			want, err := os.ReadFile(filepath.Join(d, "summary.txt"))
			if err != nil {
				want, err = os.ReadFile(filepath.Join(d, "snapshot.summary.dev"+string(rune('0'+dev))+".txt"))
			}
			if err != nil {
				t.Fatalf("%s: no summary for device %d", d, dev)
			}
			r, err := replay.Run(s, dev, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := report.WriteTorchSummary(&got, &r.Stats); err != nil {
				t.Fatal(err)
			}
			name := filepath.Base(d)
			// Without the ground truth (two_devices), a trace that needed
			// no seeding is taken as recorded from the start.
			fromStart := !r.Seeded
			if m.GroundTruth.RecordedFromStart != nil {
				fromStart = *m.GroundTruth.RecordedFromStart
			}
			mt, tt := compareTables(t, name, string(want), got.String(), fromStart)
			t.Logf("%s device %d: %d/%d cells equal (recorded from start: %t)", name, dev, mt, tt, fromStart)
			if fromStart {
				matched += mt
				total += tt
				exactFiles++
			}
		}
	}
	t.Logf("recorded from start: %d tables, %d/%d figure cells equal (the rest: cudaMalloc retries)", exactFiles, matched, total)
}

// compareTables compares two memory_summary() texts cell by cell (a cell is
// the text between two '|' of a line) and returns how many of the figure
// cells (the two header counters and the 116 numbers) are equal.
func compareTables(t *testing.T, name, want, got string, exact bool) (matched, total int) {
	t.Helper()
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	if len(wl) != len(gl) {
		t.Errorf("%s: %d lines, torch has %d", name, len(gl), len(wl))
		return 0, 0
	}
	for i := range wl {
		wc, gc := strings.Split(wl[i], "|"), strings.Split(gl[i], "|")
		if len(wc) != len(gc) {
			t.Errorf("%s line %d: %q, torch has %q", name, i+1, gl[i], wl[i])
			continue
		}
		for k := range wc {
			if wc[k] == gc[k] {
				if isFigureCell(wc[k]) {
					matched++
					total++
				}
				continue
			}
			total++
			switch {
			case strings.Contains(wc[k], "cudaMalloc retries"):
				// A lower bound: printed with "+".
			case !exact && (strings.Contains(gc[k], "?") || strings.Contains(gc[k], "+")):
				// Marked as not exact.
			default:
				t.Errorf("%s line %d cell %d: %q, torch has %q", name, i+1, k, gc[k], wc[k])
			}
		}
	}
	return matched, total
}

// isFigureCell reports whether a table cell holds a figure: a number with
// its unit, or the CUDA OOMs and cudaMalloc retries counters.
func isFigureCell(c string) bool {
	c = strings.TrimSpace(c)
	if strings.HasPrefix(c, "CUDA OOMs") || strings.HasPrefix(c, "cudaMalloc retries") {
		return true
	}
	return c != "" && (c[0] >= '0' && c[0] <= '9' || c[0] == '?')
}
