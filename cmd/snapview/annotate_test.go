package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAnnotateViews: the annotate entries of testdata/snapshots/annotate.pickle
// (torch.cuda.memory._annotate_tensor, PyTorch 2.14) show in trace with their
// metadata, on their allocation in state (up to the moment) and on their
// group in leaks, in text and JSON; the file's newer action and key are
// tolerated.
func TestAnnotateViews(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "snapshots", "annotate.pickle")
	run := func(args ...string) string {
		t.Helper()
		out, _, err := runSnapview(t, append(args, file)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	contains := func(what, out string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %q:\n%s", what, w, out)
			}
		}
	}

	info := run("info")
	contains("info", info, "annotate 3", "≥2.12 annotate trace entries", "end state: the replayed trace ends in the file's segments",
		"action:future_action")

	tr := run("trace")
	contains("trace", tr, "annotate        4.0 KiB  0x7f0000000000  0       train.py:50 pack_hook  [saved for backward]",
		"[kv_cache layer 3]", "[activation checkpoint]", "future_action")
	var tj struct {
		Devices []struct {
			Entries []struct {
				Action       string `json:"action"`
				Addr         uint64 `json:"addr"`
				UserMetadata string `json:"user_metadata"`
			} `json:"entries"`
		} `json:"devices"`
		Entries []struct {
			Action       string `json:"action"`
			Addr         uint64 `json:"addr"`
			UserMetadata string `json:"user_metadata"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(run("trace", "--json")), &tj); err != nil {
		t.Fatal(err)
	}
	entries := tj.Entries
	for _, d := range tj.Devices {
		entries = append(entries, d.Entries...)
	}
	var ann []string
	for _, e := range entries {
		if e.Action == "annotate" {
			ann = append(ann, e.UserMetadata)
		}
	}
	if want := []string{"saved for backward", "kv_cache layer 3", "activation checkpoint"}; !slices.Equal(ann, want) {
		t.Errorf("trace --json annotate entries %q, want %q", ann, want)
	}

	contains("state --at end", run("state", "--at", "end"), "Annotation", "saved for backward; activation checkpoint", "kv_cache layer 3")
	if out := run("state", "--at", "entry:4"); !strings.Contains(out, "saved for backward") || strings.Contains(out, "activation checkpoint") {
		t.Errorf("state --at entry:4 should show only the first annotation:\n%s", out)
	}
	if out := run("state", "--at", "entry:3"); strings.Contains(out, "Annotation") {
		t.Errorf("state before any annotate entry has an Annotation column:\n%s", out)
	}
	var sj struct {
		Largest []struct {
			Address     uint64   `json:"address"`
			Annotations []string `json:"annotations"`
		} `json:"largest"`
	}
	if err := json.Unmarshal([]byte(run("state", "--at", "end", "--json")), &sj); err != nil {
		t.Fatal(err)
	}
	got := map[uint64][]string{}
	for _, a := range sj.Largest {
		got[a.Address] = a.Annotations
	}
	if !slices.Equal(got[0x7F0000000000], []string{"saved for backward", "activation checkpoint"}) || !slices.Equal(got[0x7F0000001000], []string{"kv_cache layer 3"}) {
		t.Errorf("state --json annotations %v", got)
	}

	contains("leaks", run("leaks"), "annotated: kv_cache layer 3 (8.0 KiB in 1 allocation)",
		"annotated: saved for backward; activation checkpoint (4.0 KiB in 1 allocation)")
	var lj struct {
		Devices []struct {
			Groups []leakAnn `json:"groups"`
		} `json:"devices"`
		Groups []leakAnn `json:"groups"`
	}
	if err := json.Unmarshal([]byte(run("leaks", "--json")), &lj); err != nil {
		t.Fatal(err)
	}
	groups := lj.Groups
	for _, d := range lj.Devices {
		groups = append(groups, d.Groups...)
	}
	labels := map[string]int64{}
	for _, g := range groups {
		for _, a := range g.Annotations {
			labels[a.Label] += a.Bytes
		}
	}
	if labels["kv_cache layer 3"] != 8192 || labels["saved for backward; activation checkpoint"] != 4096 || len(labels) != 2 {
		t.Errorf("leaks --json annotations %v", labels)
	}
}

// TestLeaksByAnnotationCLI: --by-annotation groups by annotation in text and
// JSON (label).
func TestLeaksByAnnotationCLI(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "snapshots", "annotate.pickle")
	out, _, err := runSnapview(t, "leaks", "--by-annotation", "--at", "entry:4", file)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"2 groups by annotation (--by-annotation)", "annotation: (none)", "annotation: saved for backward", "(2 stacks; the one with the most live bytes is shown)"} {
		if !strings.Contains(out, w) {
			t.Errorf("leaks --by-annotation lacks %q:\n%s", w, out)
		}
	}
	jout, _, err := runSnapview(t, "leaks", "--by-annotation", "--json", file)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Groups []struct {
			Label *string `json:"label"`
			Bytes int64   `json:"bytes"`
		} `json:"groups"`
		Devices []struct {
			Groups []struct {
				Label *string `json:"label"`
				Bytes int64   `json:"bytes"`
			} `json:"groups"`
		} `json:"devices"`
	}
	if err := json.Unmarshal([]byte(jout), &js); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, d := range js.Devices {
		js.Groups = append(js.Groups, d.Groups...)
	}
	for _, g := range js.Groups {
		if g.Label == nil {
			t.Fatalf("group without label: %s", jout)
		}
		got[*g.Label] = g.Bytes
	}
	if len(got) != 2 || got["kv_cache layer 3"] != 8192 || got["saved for backward; activation checkpoint"] != 4096 {
		t.Errorf("leaks --by-annotation --json labels %v", got)
	}
}

// TestAnnotateReport: the HTML report's leak groups carry their annotations.
func TestAnnotateReport(t *testing.T) {
	file := filepath.Join("..", "..", "testdata", "snapshots", "annotate.pickle")
	out := filepath.Join(t.TempDir(), "r.html")
	if _, _, err := runSnapview(t, "report", "-o", out, file); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"annotated: kv_cache layer 3 (8.0 KiB in 1 allocation)", "annotated: saved for backward; activation checkpoint (4.0 KiB in 1 allocation)"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("report lacks %q", w)
		}
	}
}

type leakAnn struct {
	Annotations []struct {
		Label string `json:"label"`
		Bytes int64  `json:"bytes"`
		Count int    `json:"count"`
	} `json:"annotations"`
}
