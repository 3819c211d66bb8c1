package check

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/internal/testsnap"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/snapshot"
)

// inputs is a file's inputs of the given devices, each with an exact
// reserved_bytes.all.peak.
func inputs(name string, peaks map[int]int64, devices ...int) *Inputs {
	in := &Inputs{Name: name, Traces: map[int][]snapshot.TraceEntry{}}
	for _, d := range devices {
		in.Devices = append(in.Devices, Input{Device: d, Figures: Figures{
			"reserved_bytes.all.peak": {Key: "reserved_bytes.all.peak", Value: peaks[d], Exactness: stats.Exact}}})
	}
	return in
}

// TestRunAllPairs: each device is checked against the baseline's device
// of its ordinal, or against the baseline's only device when each file
// used one (with a note); a baseline without the device is a usage error
// naming both files' devices.
func TestRunAllPairs(t *testing.T) {
	growth := []Rule{{Kind: MaxGrowth, Name: "reserved_peak", Key: "reserved_bytes.all.peak", Percent: 10}}
	tests := []struct {
		name      string
		run, base *Inputs
		verdicts  []Verdict
		note, err string
	}{
		{"same ordinals", inputs("a", map[int]int64{0: 100, 1: 200}, 0, 1), inputs("b", map[int]int64{0: 100, 1: 100}, 0, 1), []Verdict{Pass, Fail}, "", ""},
		{"one device each", inputs("a", map[int]int64{3: 100}, 3), inputs("b", map[int]int64{5: 100}, 5), []Verdict{Pass},
			"device 3 of a is checked against device 5 of b: each file used one device", ""},
		{"missing device", inputs("a", nil, 0, 1), inputs("b", nil, 0, 2), nil, "",
			"--baseline b has no device 1 (its devices: 0, 2; a's: 0, 1): give --device N"},
	}
	for _, tt := range tests {
		res, notes, err := RunAll(growth, tt.run, tt.base)
		var ue *analysis.UsageError
		switch {
		case tt.err != "":
			if err == nil || err.Error() != tt.err || !errors.As(err, &ue) {
				t.Errorf("%s: err %v, want the usage error %q", tt.name, err, tt.err)
			}
			continue
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var got []Verdict
		for _, r := range res {
			got = append(got, r.Verdict)
		}
		if !slices.Equal(got, tt.verdicts) {
			t.Errorf("%s: verdicts %v, want %v", tt.name, got, tt.verdicts)
		}
		var texts []string
		for _, n := range notes {
			texts = append(texts, n.Text)
		}
		if strings.Join(texts, "|") != tt.note {
			t.Errorf("%s: notes %q, want %q", tt.name, texts, tt.note)
		}
	}
}

// TestSnapshotInputsLeaks: on the real leak_train recording the leak
// verdicts name the leaking stack, the exact trace is kept for
// SameRequests, and mlp_train (no leak) has none; without Leaks the
// leaks are not judged.
func TestSnapshotInputsLeaks(t *testing.T) {
	dir := testsnap.Corpus(t)
	where := func(_ *snapshot.Snapshot, id snapshot.StackID) string { return "stack" }
	for _, tt := range []struct {
		name  string
		leaks bool
		want  int // leaks found: -1 for "some"
	}{{"leak_train", true, -1}, {"mlp_train", true, 0}, {"leak_train", false, 0}} {
		s, err := snapshot.Load(filepath.Join(dir, "torch2.11", tt.name, "snapshot.pickle"))
		if err != nil {
			t.Fatal(err)
		}
		in, _, err := SnapshotInputs(s, tt.name, SnapshotOptions{Devices: s.Devices(), Leaks: tt.leaks, Where: where})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(in.Devices) != 1 || in.Name != tt.name {
			t.Fatalf("%s: %d devices, name %q", tt.name, len(in.Devices), in.Name)
		}
		d := in.Devices[0]
		if _, ok := in.Traces[d.Device]; !ok {
			t.Errorf("%s: the from-start trace of device %d is not kept", tt.name, d.Device)
		}
		if d.LeaksKnown != tt.leaks || (tt.want < 0 && len(d.Leaks) == 0) || (tt.want >= 0 && len(d.Leaks) != tt.want) {
			t.Errorf("%s (leaks %v): known %v, %d leaks %v", tt.name, tt.leaks, d.LeaksKnown, len(d.Leaks), d.Leaks)
		}
		if peak := d.Figures["reserved_bytes.all.peak"]; peak.Value <= 0 || peak.Exactness != stats.Exact {
			t.Errorf("%s: reserved_bytes.all.peak %+v, want an exact figure", tt.name, peak)
		}
	}
}
