package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/snapview/snapview/internal/corpus"
)

func TestInfoUsageErrors(t *testing.T) {
	testUsageErrors(t, []usageCase{
		{"no file", []string{"info"}, ""},
		{"two files", []string{"info", "a.pickle", "b.pickle"}, ""},
		{"negative device", []string{"info", "--device", "-1", "a.pickle"}, ""},
		{"unknown flag", []string{"info", "--top", "3", "a.pickle"}, ""},
	})
}

func TestInfoHelp(t *testing.T) {
	out, _, err := runSnapview(t, "info", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"snapview info snap.pickle", "--json", "max_entries", "Warnings"} {
		if !strings.Contains(out, want) {
			t.Errorf("info --help lacks %q", want)
		}
	}
}

func TestInfoFixture(t *testing.T) {
	file := fixture(t, "mlp_train.pickle")
	out, errOut, err := runSnapview(t, "info", file)
	if err != nil {
		t.Fatal(err)
	}
	if errOut != "" {
		t.Errorf("stderr = %q, want nothing", errOut)
	}
	for _, want := range []string{"format:        pickle protocol 4", "enabled=all", "stacks=python", "context=all", "from the start"} {
		if !strings.Contains(out, want) {
			t.Errorf("info lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runSnapview(t, "info", "--json", file)
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Recording struct {
			Stacks struct{ Value string } `json:"stacks"`
		} `json:"recording"`
		Devices []struct {
			Replay struct {
				EndStateEqual bool `json:"end_state_equal"`
			} `json:"replay"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Recording.Stacks.Value != "python" || len(v.Devices) != 1 || !v.Devices[0].Replay.EndStateEqual {
		t.Errorf("info --json: stacks %q, devices %+v; want python and one device whose end state matches", v.Recording.Stacks.Value, v.Devices)
	}
}

// TestInfoCorpus: info (text and JSON) succeeds on every real snapshot.
func TestInfoCorpus(t *testing.T) {
	var files []string
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/snapshot.pickle", 17}, {"torch2.11-probe/*.pickle", 13}, {"public/*.pickle", 34}} {
		files = append(files, corpus.Glob(t, pat.glob, pat.min)...)
	}
	for _, f := range files {
		for _, args := range [][]string{{"info", f}, {"info", "--json", f}} {
			out, _, err := runSnapview(t, args...)
			if err != nil {
				t.Errorf("%q: %v", args, err)
				continue
			}
			if !strings.Contains(out, "version") {
				t.Errorf("%q: output has no version hint", args)
			}
		}
	}
	t.Logf("info ran on %d files", len(files))
}
