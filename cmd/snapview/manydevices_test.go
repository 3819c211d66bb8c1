package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestManyDevicesOutputBounded: a file listing 100,000 devices that all
// warn alike (testdata/gen/manydevices100k.py: 800 KB raw; the replay of
// every device differs from the file's segments) gives each view a few
// lines of stderr, not one or three per device (leaks wrote 27 MB), and
// a stdout that does not grow with the device count: one warning per kind
// naming how many more devices share it, 64 devices shown at most (as the
// report draws), device lists shortened.
func TestManyDevicesOutputBounded(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "snapshots", "manydevices100k.pickle.xz")
	for _, args := range [][]string{
		{"summary"}, {"leaks"}, {"state"}, {"segments"}, {"trace"}, {"info"}, {"whatif"},
		{"summary", "--device", "70000"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stdout, stderr, err := runSnapview(t, append(args, file)...)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(stderr, "\n"); n >= 50 || len(stderr) > 8<<10 {
				t.Errorf("stderr: %d lines, %d bytes; want under 50 lines:\n%.2000s", n, len(stderr), stderr)
			}
			if len(stdout) > 256<<10 {
				t.Errorf("stdout: %d bytes, want at most 256 KiB", len(stdout))
			}
			if strings.Contains(stderr, "99998") && !strings.Contains(stderr, "-99999") {
				t.Errorf("a device list is not shortened:\n%.2000s", stderr)
			}
		})
	}
	_, stderr, _ := runSnapview(t, "summary", file)
	for _, want := range []string{
		"warning: 99,936 of the file's 100,000 devices are left out of the summary (over 64, the most it shows: 0-63); --device N shows another",
		"warning: the same as device 0's warning above for 61 more devices: 3-63",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := bytes.Count([]byte(stderr), []byte("warning: device ")); n != 3 {
		t.Errorf("%d per-device warnings written in full, want 3:\n%s", n, stderr)
	}
}
