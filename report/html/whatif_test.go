package html

import (
	"strings"
	"testing"
)

// TestWhatifOOMMarker: the HTML report's OOM marker carries the what-if
// verdict: the settings that would have fit.
func TestWhatifOOMMarker(t *testing.T) {
	s := sharedSnapshot(t, "whatif/varlen_train/default_cap4656M/snapshot.pickle.xz")
	r, err := buildHTML(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Devices) != 1 || len(r.Devices[0].OOMs) != 1 {
		t.Fatalf("want one device with one OOM marker")
	}
	label := r.Devices[0].OOMs[0].Label
	if !strings.Contains(label, "What-if") || !strings.Contains(label, `"expandable_segments:True" (peak reserved`) {
		t.Errorf("OOM marker %q lacks the what-if verdict", label)
	}
}
