package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck runs check on real recordings: exit codes, the lines that
// decide them, and the causes it names against a baseline.
func TestCheck(t *testing.T) {
	leak := sharedSnapshot(t, "torch2.11/leak_train/snapshot.pickle")
	mlp := sharedSnapshot(t, "torch2.11/mlp_train/snapshot.pickle")
	late := sharedSnapshot(t, "torch2.11/late_start/snapshot.pickle")
	oomStats := sharedSnapshot(t, "torch2.11/oom/stats.json")
	oom := sharedSnapshot(t, "torch2.11/oom/snapshot.pickle")
	def := sharedSnapshot(t, "whatif/varlen_train/default/snapshot.pickle.xz")
	expandable := sharedSnapshot(t, "torch2.11/expandable/snapshot.pickle")
	exp := sharedSnapshot(t, "whatif/varlen_train/expandable/snapshot.pickle.xz")
	tests := []struct {
		name string
		args []string
		exit int
		want []string // lines (or parts of lines) of stdout
	}{
		{"limits hold", []string{"--max", "allocated_peak=1GiB", "--no-oom", leak}, 0,
			[]string{"PASS    device 0  allocated_peak (allocated_bytes.all.peak) = 731.0 MiB  <= 1.0 GiB",
				"PASS    device 0  ooms (num_ooms) = 0  <= 0", "2 passed, 0 failed, 0 unknown: OK"}},
		{"limit exceeded", []string{"--max", "allocated_peak=700MiB", leak}, 1,
			[]string{"FAIL    device 0  allocated_peak (allocated_bytes.all.peak) = 731.0 MiB  <= 700.0 MiB"}},
		{"planted leak", []string{"--no-leak", leak}, 1,
			[]string{"FAIL    device 0  no leak = 7 leaking stacks", "snapgen.py:180 leak_train"}},
		{"no leak", []string{"--no-leak", mlp}, 0, []string{"PASS    device 0  no leak = 0 leaking stacks"}},
		{"growth from the requests", []string{"--baseline", mlp, "--max-growth", "allocated_peak=5", "--max", "reserved_peak=110%", leak}, 1,
			[]string{"FAIL    device 0  allocated_peak (allocated_bytes.all.peak) = 731.0 MiB  <= baseline 467.0 MiB + 5% = 490.3 MiB",
				"FAIL    device 0  reserved_peak (reserved_bytes.all.peak) = 754.0 MiB  <= 110% of baseline 472.0 MiB = 519.2 MiB  [allocator]",
				"the requests changed: allocated_bytes.all.peak moved by +264.1 MiB"}},
		{"same requests, less reserved", []string{"--baseline", def, "--max", "reserved_peak=100%", "--max-growth", "allocated_peak=0", exp}, 0,
			[]string{"PASS    device 0  reserved_peak (reserved_bytes.all.peak) = 4.2 GiB  <= 100% of baseline 4.8 GiB = 4.8 GiB  [allocator]",
				"same requests on both runs: the difference is the allocator's"}},
		{"same requests, more reserved", []string{"--baseline", exp, "--max-growth", "reserved_peak=1", def}, 1,
			[]string{"FAIL    device 0  reserved_peak (reserved_bytes.all.peak) = 4.8 GiB", "same requests on both runs"}},
		{"lower bound under the limit is unknown", []string{"--max", "reserved_peak=1GiB", late}, 0,
			[]string{"UNKNOWN device 0  reserved_peak (reserved_bytes.all.peak) = 230.0 MiB+  <= 1.0 GiB  [allocator]",
				"0 passed, 0 failed, 1 unknown (unknown does not fail without --strict): OK"}},
		{"strict fails the unknown", []string{"--strict", "--max", "reserved_peak=1GiB", late}, 1,
			[]string{"0 passed, 0 failed, 1 unknown (--strict: unknown fails): FAIL"}},
		{"lower bound above the limit fails", []string{"--max", "reserved_peak=100MiB", late}, 1,
			[]string{"FAIL    device 0  reserved_peak (reserved_bytes.all.peak) = 230.0 MiB+  <= 100.0 MiB"}},
		{"retries from a whole trace without a release before a cudaMalloc are exact", []string{"--no-retries", mlp}, 0,
			[]string{"PASS    device 0  retries (num_alloc_retries) = 0  <= 0  [allocator]"}},
		{"retries a snapshot bounds from both sides", []string{"--no-retries", expandable}, 0,
			[]string{"UNKNOWN device 0  retries (num_alloc_retries) = 0 to 1  <= 0  [allocator]", "a cudaMalloc retry that succeeds leaves no trace entry"}},
		{"retries under the trace's upper bound pass", []string{"--max", "retries=3", oom}, 0,
			[]string{"PASS    device 0  retries (num_alloc_retries) = 1 to 3  <= 3  [allocator]"}},
		{"memory_stats dump is exact", []string{"--no-oom", "--max", "retries=0", oomStats}, 1,
			[]string{"FAIL    device 0  retries (num_alloc_retries) = 3  <= 0  [allocator]", "FAIL    device 0  ooms (num_ooms) = 1  <= 0"}},
		{"oom in the trace", []string{"--no-oom", oom}, 1, []string{"FAIL    device 0  ooms (num_ooms) = 1  <= 0"}},
		// Each rank used one GPU (the other device of each file holds a
		// lone snapshot entry): rank 1's device 1 against rank 0's 0.
		{"one device each", []string{"--baseline", bundled("ddp_rank0.pickle"), "--max-growth", "allocated_peak=2", bundled("ddp_rank1.pickle")}, 1,
			[]string{"FAIL    device 1  allocated_peak (allocated_bytes.all.peak) = 322.1 MiB  <= baseline 258.1 MiB + 2% = 263.3 MiB",
				"0 passed, 1 failed, 0 unknown: FAIL"}},
		{"a log against its snapshot", []string{"--baseline", bundled("monitor_train.stats.jsonl"), "--max-growth", "allocated_peak=0", bundled("monitor_train.pickle")}, 0,
			[]string{"PASS    device 0  allocated_peak (allocated_bytes.all.peak) = 303.1 MiB  <= baseline 303.1 MiB + 0% = 303.1 MiB"}},
		// leaks calls the gc-cycle leak "likely leak (reference cycles
		// left to gc?)": --no-leak too.
		{"gc-cycle leak", []string{"--no-leak", bundled("leak_cycle.pickle")}, 1,
			[]string{"FAIL    device 0  no leak = 2 leaking stacks", "leaking: gpugen.py:105 make_cycle"}},
		// public p32: device 0 has no steps, device 2 three repetitions of
		// one allocation inside a DataParallel worker's forward pass:
		// growth cannot be judged (explain's growth-unjudged), not a leak.
		{"growth without steps", []string{"--no-leak", sharedSnapshot(t, "public/p32-3dev-expandable-oom.pickle")}, 0,
			[]string{"UNKNOWN device 0  no leak = ?", "no training steps found (20 equal slices)",
				"PASS    device 1  no leak = 0 leaking stacks",
				"UNKNOWN device 2  no leak = ?", "only 3 steps, from one repeating allocation",
				"1 passed, 0 failed, 2 unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := runSnapview(t, append([]string{"check"}, tt.args...)...)
			got := 0
			if err != nil {
				got = exitCode(err)
			}
			if got != tt.exit {
				t.Errorf("exit %d (%v), want %d\n%s", got, err, tt.exit, out)
			}
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range tt.want {
				if !strings.Contains(flat, strings.Join(strings.Fields(w), " ")) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestCheckJUnitAndJSON reads the JUnit report back as a JUnit parser does
// and checks it against the JSON view of the same run.
func TestCheckJUnitAndJSON(t *testing.T) {
	leak := sharedSnapshot(t, "torch2.11/leak_train/snapshot.pickle")
	late := sharedSnapshot(t, "torch2.11/late_start/snapshot.pickle")
	for _, strict := range []bool{false, true} {
		xmlPath := filepath.Join(t.TempDir(), "check.xml")
		args := []string{"check", "--json", "--junit", xmlPath, "--max", "allocated_peak=1GiB", "--no-leak", "--max", "num_sync_all_streams=0", leak}
		if strict {
			args = append(args[:1], append([]string{"--strict"}, args[1:]...)...)
		}
		out, _, err := runSnapview(t, args...)
		if err == nil || exitCode(err) != 1 {
			t.Fatalf("exit %v, want 1 (the planted leak)", err)
		}
		var j struct {
			OK                      bool
			Passed, Failed, Unknown int
			Checks                  []struct{ Verdict, Check string }
		}
		if err := json.Unmarshal([]byte(out), &j); err != nil {
			t.Fatal(err)
		}
		if j.OK || j.Passed != 1 || j.Failed != 1 || j.Unknown != 1 || len(j.Checks) != 3 {
			t.Errorf("JSON: %+v, want 1 passed, 1 failed (no_leak), 1 unknown (num_sync_all_streams)", j)
		}
		b, err := os.ReadFile(xmlPath)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Suites []struct {
				Tests    int `xml:"tests,attr"`
				Failures int `xml:"failures,attr"`
				Skipped  int `xml:"skipped,attr"`
				Cases    []struct {
					Name    string `xml:"name,attr"`
					Failure *struct {
						Message string `xml:"message,attr"`
					} `xml:"failure"`
					Skipped *struct{} `xml:"skipped"`
				} `xml:"testcase"`
			} `xml:"testsuite"`
		}
		if err := xml.Unmarshal(b, &doc); err != nil {
			t.Fatalf("JUnit XML does not parse: %v\n%s", err, b)
		}
		wantFail, wantSkip := 1, 1
		if strict {
			wantFail, wantSkip = 2, 0
		}
		s := doc.Suites[0]
		if len(doc.Suites) != 1 || s.Tests != 3 || s.Failures != wantFail || s.Skipped != wantSkip || len(s.Cases) != 3 {
			t.Errorf("strict=%v: suite %+v, want 3 tests, %d failures, %d skipped", strict, s, wantFail, wantSkip)
		}
		if s.Cases[2].Failure == nil || !strings.Contains(s.Cases[2].Failure.Message, "snapgen.py:180 leak_train") {
			t.Errorf("the leak's testcase does not fail naming the leak: %+v", s.Cases[2])
		}
	}
	// A lower bound and the JUnit "skipped" it becomes.
	if _, _, err := runSnapview(t, "check", "--max", "reserved_peak=1GiB", late); err != nil {
		t.Errorf("an unknown check failed the run without --strict: %v", err)
	}
}

func TestCheckUsage(t *testing.T) {
	testUsageErrors(t, []usageCase{
		{"no check", []string{"check", "x.pickle"}, "no check given"},
		{"unknown name", []string{"check", "--max", "foo=1", "x.pickle"}, `"foo" is not a memory_stats() key`},
		{"no value", []string{"check", "--max", "allocated_peak", "x.pickle"}, "want NAME=VALUE"},
		{"bad bytes", []string{"check", "--max", "allocated_peak=lots", "x.pickle"}, "want a byte count"},
		{"count with a unit", []string{"check", "--max", "retries=1GiB", "x.pickle"}, "counts, so want a whole number"},
		{"percent without baseline", []string{"check", "--max", "reserved_peak=110%", "x.pickle"}, "needs --baseline"},
		{"growth without baseline", []string{"check", "--max-growth", "allocated_peak=2", "x.pickle"}, "needs --baseline"},
		{"bad percent", []string{"check", "--baseline", "b", "--max-growth", "allocated_peak=NaN", "x.pickle"}, "want a percentage"},
	})
	testMissingFile(t, "check", "--no-oom")
}

// TestCheckSettingsPairs: each uncapped what-if recording against its
// workload's default run made the same requests, so check calls every
// reserved difference the allocator's, and an allocated difference the
// rounding's (roundup_power2_divisions alone changes block sizes).
func TestCheckSettingsPairs(t *testing.T) {
	n := 0
	for _, w := range []string{"varlen_train", "frag_cap"} {
		def := sharedSnapshot(t, "whatif/"+w+"/default/snapshot.pickle.xz")
		for _, s := range []string{"expandable", "max_split_128", "roundup_4", "gc_06"} {
			file := sharedSnapshot(t, "whatif/"+w+"/"+s+"/snapshot.pickle.xz")
			out, _, _ := runSnapview(t, "check", "--json", "--baseline", def, "--max-growth", "allocated_peak=0", "--max-growth", "reserved_peak=0", file)
			var j struct {
				Checks []struct {
					Name, Verdict, Cause string
					Value, Baseline      int64
				}
			}
			if err := json.Unmarshal([]byte(out), &j); err != nil {
				t.Fatalf("%s/%s: %v\n%s", w, s, err, out)
			}
			for _, c := range j.Checks {
				want := "allocator"
				if c.Name == "allocated_peak" {
					want = ""
					if c.Value != c.Baseline {
						want = "rounding"
					}
				}
				if c.Cause != want {
					t.Errorf("%s/%s %s: cause %q, want %q (value %d, baseline %d)", w, s, c.Name, c.Cause, want, c.Value, c.Baseline)
				}
				if (c.Verdict == "pass") != (c.Value <= c.Baseline) {
					t.Errorf("%s/%s %s: verdict %s for %d against %d", w, s, c.Name, c.Verdict, c.Value, c.Baseline)
				}
				n++
			}
		}
	}
	if n != 16 {
		t.Errorf("%d checks judged, want 16", n)
	}
}
