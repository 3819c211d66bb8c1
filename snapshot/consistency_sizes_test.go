package snapshot

import (
	"strings"
	"testing"
)

// TestSizesPast4EiB: a device whose segments or trace allocations add up
// past 2^62 bytes is a one-line error naming the field (the sums wrapped
// and summary printed "-8.0 EiB reserved"); sizes that fit pass.
func TestSizesPast4EiB(t *testing.T) {
	seg := func(addr, size string) string {
		return `{"device": 0, "address": ` + addr + `, "total_size": ` + size + `, "allocated_size": 0, "active_size": 0,
			"requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0], "is_expandable": false,
			"frames": [], "blocks": [{"address": ` + addr + `, "size": ` + size + `, "requested_size": 0, "state": "inactive", "frames": []}]}`
	}
	alloc := func(addr, size string) string {
		return `{"action": "alloc", "addr": ` + addr + `, "size": ` + size + `, "stream": 0, "time_us": 1, "frames": []}`
	}
	for _, tt := range []struct {
		name, json, err string
	}{
		{"segments fit", `{"segments": [` + seg("2097152", "4611686018427387904") + `], "device_traces": [[]]}`, ""},
		{"segments past", `{"segments": [` + seg("2097152", "4611686018427387904") + `, ` + seg("4611686018429485056", "2097152") + `], "device_traces": [[]]}`,
			"segments[1].total_size: the segments of device 0 add up past 4 EiB"},
		{"allocations past", `{"segments": [], "device_traces": [[` + alloc("2097152", "3458764513820540928") + `, ` + alloc("4194304", "3458764513820540928") + `]]}`,
			"device_traces[0][1].size: the allocations of device 0 add up past 4 EiB"},
	} {
		_, err := Decode(strings.NewReader(tt.json))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: err %v, want %q", tt.name, err, tt.err)
		}
	}
}

// TestJSONLeadingSpace: JSON after any amount of white space is read
// (more than 64 bytes of it was refused as "not a pickle or JSON").
func TestJSONLeadingSpace(t *testing.T) {
	for _, n := range []int{0, 63, 64, 65, 5000, 1 << 20} {
		s, err := Decode(strings.NewReader(strings.Repeat(" ", n) + "\n" + `{"segments": [], "device_traces": [[]]}`))
		if err != nil || len(s.Traces) != 1 {
			t.Errorf("%d spaces: %v", n, err)
		}
	}
	if _, err := Decode(strings.NewReader(strings.Repeat(" ", 100000))); err == nil || !strings.Contains(err.Error(), "white space only") {
		t.Errorf("white space only: err %v", err)
	}
}
