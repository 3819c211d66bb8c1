package export

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
)

type chromeEvent struct {
	Name string         `json:"name"`
	Ph   string         `json:"ph"`
	Pid  *int           `json:"pid"`
	Tid  *int           `json:"tid"`
	Ts   *json.Number   `json:"ts"`
	Dur  *json.Number   `json:"dur"`
	S    string         `json:"s"`
	Args map[string]any `json:"args"`
}

// TestChromeTraceStructure: the JSON parses as the Trace Event Format's
// object form; counters peak at the replay's peak and end at its end
// figures; one instant per OOM; one complete event per record_function
// START; every ts and dur a whole number of microseconds, dur >= 0.
func TestChromeTraceStructure(t *testing.T) {
	for _, dir := range sharedDirs(t) {
		s := loadShared(t, dir)
		in := ChromeInput{Snapshot: s, Name: filepath.Base(dir)}
		for d := range s.Traces {
			if len(s.Traces[d]) == 0 {
				continue
			}
			r, err := replay.Run(s, d, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			in.Results = append(in.Results, r)
		}
		var buf bytes.Buffer
		if err := WriteChromeTrace(&buf, []ChromeInput{in}, []Label{{"rank", "3"}}); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TraceEvents []chromeEvent  `json:"traceEvents"`
			OtherData   map[string]any `json:"otherData"`
		}
		dec := json.NewDecoder(&buf)
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if doc.OtherData["rank"] != "3" {
			t.Errorf("%s: otherData = %v, want the label", dir, doc.OtherData)
		}
		type key struct {
			pid  int
			name string
		}
		peak, last := map[key]int64{}, map[key]int64{}
		counts := map[key]int{}
		lastTs := map[key]int64{}
		for _, e := range doc.TraceEvents {
			if e.Pid == nil {
				t.Fatalf("%s: event without pid: %+v", dir, e)
			}
			counts[key{*e.Pid, e.Ph}]++
			if e.Ph == "M" {
				continue
			}
			if e.Ts == nil || e.Tid == nil {
				t.Fatalf("%s: event without ts or tid: %+v", dir, e)
			}
			ts, err := e.Ts.Int64()
			if err != nil || ts < 0 {
				t.Fatalf("%s: ts %v", dir, e.Ts)
			}
			switch e.Ph {
			case "C":
				k := key{*e.Pid, e.Name}
				if ts < lastTs[k] {
					t.Fatalf("%s: counter %s goes back in time", dir, e.Name)
				}
				lastTs[k] = ts
				v, err := e.Args["bytes"].(json.Number).Int64()
				if err != nil {
					t.Fatal(err)
				}
				peak[k] = max(peak[k], v)
				last[k] = v
			case "X":
				if d, err := e.Dur.Int64(); err != nil || d < 0 {
					t.Fatalf("%s: dur %v", dir, e.Dur)
				}
			case "i":
				if e.S != "p" {
					t.Errorf("%s: instant scope %q", dir, e.S)
				}
			default:
				t.Fatalf("%s: unexpected ph %q", dir, e.Ph)
			}
		}
		for _, r := range in.Results {
			d := r.Device
			if got, want := peak[key{d, "allocated"}], r.Allocated[r.PeakIndex]; got != want {
				t.Errorf("%s: device %d: allocated counter peaks at %d, want %d", dir, d, got, want)
			}
			if got, want := last[key{d, "reserved"}], r.Stats.ReservedBytes[stats.PoolAll].Current; got != want {
				t.Errorf("%s: device %d: reserved counter ends at %d, want %d", dir, d, got, want)
			}
			if got, want := counts[key{d, "i"}], len(r.OOMs); got != want {
				t.Errorf("%s: device %d: %d oom instants, want %d", dir, d, got, want)
			}
			starts := 0
			for _, a := range s.Annotations {
				if a.Device == d && a.Stage == "START" {
					starts++
				}
			}
			if got := counts[key{d, "X"}]; got != starts {
				t.Errorf("%s: device %d: %d complete events, want %d", dir, d, got, starts)
			}
		}
	}
}
