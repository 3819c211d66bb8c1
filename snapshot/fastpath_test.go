package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/snapview/snapview/snapshot/pickle"
)

// runMachine runs the pickle machine over data as decode does and returns
// it, for tests that look at how a file was read.
func runMachine(t *testing.T, data []byte, lim Limits) *pickle.Machine {
	t.Helper()
	lim = lim.withDefaults()
	c := newConverter()
	c.lim = lim
	c.budget = newBudget(lim, func() int64 { return int64(len(data)) })
	m := c.newMachine(bytes.NewReader(data), 0)
	if _, err := m.Run(); err != nil {
		t.Fatalf("run: %v", err)
	}
	return m
}

// decodeBoth decodes data with and without the fast path and fails the
// test where the two differ.
func decodeBoth(t *testing.T, data []byte) (fast, generic *Snapshot) {
	t.Helper()
	fast, ferr := Decode(bytes.NewReader(data))
	generic, gerr := DecodeLimits(bytes.NewReader(data), Limits{genericOnly: true})
	if (ferr == nil) != (gerr == nil) || (ferr != nil && ferr.Error() != gerr.Error()) {
		t.Fatalf("errors differ: fast %v, generic %v", ferr, gerr)
	}
	if ferr != nil {
		return nil, nil
	}
	if a, b := canon(generic), canon(fast); !reflect.DeepEqual(a, b) {
		t.Fatalf("fast path differs from the generic machine (-generic +fast):\n%s", cmp.Diff(a, b))
	}
	if !reflect.DeepEqual(fast.Fields, generic.Fields) {
		t.Errorf("field counts differ (-generic +fast):\n%s", cmp.Diff(generic.Fields, fast.Fields))
	}
	return fast, generic
}

// TestFastPathShapes decodes the fixtures made to sit at the fast path's
// edges (testdata/gen/fastpath.py) three ways: fast path, generic machine,
// gopickle. The fast path must have read most batches and given up on the
// ones the generator spoiled.
func TestFastPathShapes(t *testing.T) {
	for _, tt := range []struct {
		name             string
		entries, batches int
	}{
		// Batches of 1000 entries: device 0 has 6, two of them spoilt
		// (an unknown key, an unknown action), device 1 has 6, three
		// spoilt (frames None, a repeated dict, a 9-byte int). Other
		// lists (segments, blocks, frames) are given up at once.
		{"fastpath.proto2.pickle", 6000 + 5001, 7},
		{"fastpath.proto4.pickle", 6000 + 5001, 7},
		// One batch per device, device 1's spoilt: the generic machine
		// reads it after the fast path read device 0 (FuzzDecode's seed).
		{"fastpath.small.pickle", 150 + 120, 1},
	} {
		name := tt.name
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(fixtures, name))
			if err != nil {
				t.Fatal(err)
			}
			fast, _ := decodeBoth(t, data)
			ref, err := DecodeReference(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if a, b := canon(ref), canon(fast); !reflect.DeepEqual(a, b) {
				t.Fatalf("fast decoder differs from gopickle (-gopickle +fast):\n%s", cmp.Diff(a, b))
			}
			if n := len(fast.Traces[0]) + len(fast.Traces[1]); n != tt.entries {
				t.Errorf("%d trace entries, want %d", n, tt.entries)
			}
			m := runMachine(t, data, Limits{})
			t.Logf("fast path: %d batches read, %d given up", m.Stats().Batches, m.Stats().GivenUp)
			if m.Stats().Batches != tt.batches {
				t.Errorf("fast path took %d batches (gave up on %d), want %d", m.Stats().Batches, m.Stats().GivenUp, tt.batches)
			}
		})
	}
}

// TestFastPathRealFiles checks the fast path against the generic machine on
// every real snapshot in ../shared, and that it reads the trace of the
// files that have one.
func TestFastPathRealFiles(t *testing.T) {
	for _, f := range realFiles(t) {
		rel, _ := filepath.Rel(sharedSnapshots(t), f)
		t.Run(rel, func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			fast, _ := decodeBoth(t, data)
			if fast == nil {
				return
			}
			entries := 0
			for _, tr := range fast.Traces {
				entries += len(tr)
			}
			if entries < 1000 {
				return
			}
			if m := runMachine(t, data, Limits{}); m.Stats().Batches == 0 {
				t.Errorf("%d trace entries and no batch read by the fast path (%d given up)", entries, m.Stats().GivenUp)
			}
		})
	}
}

// TestFastPathStackLimit: with a small MaxStack the fast path leaves the
// batches to the generic machine, which reports the limit.
func TestFastPathStackLimit(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixtures, "fastpath.proto4.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = DecodeLimits(bytes.NewReader(data), Limits{MaxStack: 500})
	_, gerr := DecodeLimits(bytes.NewReader(data), Limits{MaxStack: 500, genericOnly: true})
	if err == nil || gerr == nil || err.Error() != gerr.Error() {
		t.Fatalf("MaxStack 500: fast path %v, generic %v; want the same limit error", err, gerr)
	}
}
