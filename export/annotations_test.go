package export

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/snapshot"
)

// innermostBrute is the innermost record_function range open at time t,
// found the slow way: of the ranges with START <= t < END (an
// unterminated one to its end inclusive), the one that started last (the
// last in START order among equals).
func innermostBrute(ranges []Range, t int64) string {
	best := -1
	for i, r := range ranges {
		if r.StartUS <= t && (t < r.EndUS || (r.Open && t <= r.EndUS)) {
			if best < 0 || r.StartUS >= ranges[best].StartUS {
				best = i
			}
		}
	}
	if best < 0 {
		return ""
	}
	return ranges[best].Name
}

// TestProfileRecordFunctionLabels: on the recording with record_function
// ranges (torch2.11/annotations), the inuse_space at the peak by
// "record_function" label equals the live blocks' bytes grouped by the
// range open at their alloc entry, found by brute force; the labels cover
// every live block whose alloc ran inside a range.
func TestProfileRecordFunctionLabels(t *testing.T) {
	dir := corpus.Path(t, "torch2.11/annotations")
	s := loadShared(t, dir)
	states := peakStates(t, s)
	p, err := Profile(s, states, ProfileOptions{Source: dir})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range p.Sample {
		got[firstLabel(sm.Label["record_function"])] += sm.Value[3]
	}
	want := map[string]int64{}
	for _, ds := range states {
		r, st := ds.Result, ds.State
		trace := s.Traces[r.Device]
		ranges := Ranges(s, r.Device, trace[len(trace)-1].TimeUS)
		for _, sg := range st.Segments {
			for _, b := range sg.Blocks {
				if b.State != snapshot.StateActiveAllocated {
					continue
				}
				name := ""
				if a := &r.Allocs[b.Alloc]; a.AllocIndex >= 0 {
					name = innermostBrute(ranges, trace[a.AllocIndex].TimeUS)
				}
				want[name] += b.Size
			}
		}
	}
	if len(want) < 3 {
		t.Fatalf("only %d range names at the peak: the test needs a recording with ranges", len(want))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("inuse_space by record_function (-brute force +profile):\n%s", d)
	}
}

func firstLabel(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// TestExportAnnotateEntries: annotate.pickle's three annotate entries
// (testdata/gen/annotate.py) reach every export: pprof's "annotation"
// label at the end (8,192 B "kv_cache layer 3", 4,096 B "saved for
// backward; activation checkpoint", as leaks --by-annotation groups them),
// the Chrome trace's instant events, the Parquet annotations table.
func TestExportAnnotateEntries(t *testing.T) {
	s, err := snapshot.Load(filepath.Join("..", "testdata", "snapshots", "annotate.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	end := len(r.Allocated) - 1
	st, err := r.StateAt(end)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Profile(s, []DeviceState{{Result: r, State: st, Moment: "end"}}, ProfileOptions{Source: "annotate"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range p.Sample {
		if sm.Value[3] > 0 {
			got[firstLabel(sm.Label["annotation"])] += sm.Value[3]
		}
	}
	want := map[string]int64{"kv_cache layer 3": 8192, "saved for backward; activation checkpoint": 4096}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("inuse_space by annotation (-want +got):\n%s", d)
	}

	var buf bytes.Buffer
	if err := WriteChromeTrace(&buf, []ChromeInput{{Snapshot: s, Name: "annotate", Results: []*replay.Result{r}}}, nil); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Tid  int            `json:"tid"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, e := range doc.TraceEvents {
		if e.Name == "annotate" && e.Tid == chromeAnnotateTid {
			labels = append(labels, e.Args["label"].(string))
		}
	}
	if d := cmp.Diff([]string{"saved for backward", "kv_cache layer 3", "activation checkpoint"}, labels); d != "" {
		t.Errorf("chrome annotate events (-want +got):\n%s", d)
	}

	ds := NewDataset(nil)
	if err := ds.Add(s, "annotate", nil, []*replay.Result{r}); err != nil {
		t.Fatal(err)
	}
	tables, err := ds.Tables()
	if err != nil {
		t.Fatal(err)
	}
	rows := readTable[AnnotationRow](t, tables, "annotations")
	var names []string
	for _, row := range rows {
		if row.Kind != "annotate" || row.Entry == nil || row.Address == nil {
			t.Errorf("row %+v: want kind annotate with entry and address", row)
		}
		names = append(names, row.Name)
	}
	if d := cmp.Diff(labels, names); d != "" {
		t.Errorf("parquet annotations (-chrome +parquet):\n%s", d)
	}
}
