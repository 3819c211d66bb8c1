package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snapview/snapview/analyze"
	"github.com/snapview/snapview/snapshot"
)

func TestWrapLine(t *testing.T) {
	tests := []struct {
		line   string
		width  int
		indent string
		want   []string
	}{
		{"short", 10, "  ", []string{"short"}},
		{"grows every step, never freed: likely leak", 20, "", []string{"grows every step,", "never freed: likely", "leak"}},
		{"  /home/x/a/very/long/path/model.py:12 forward", 24, "      ",
			[]string{"  /home/x/a/very/long/", "      path/model.py:12", "      forward"}},
		{`  C:\x\y\z.py:3 f`, 12, "    ", []string{`  C:\x\y\`, `    z.py:3 f`}},
		{"abcdefghijklmnop", 6, "", []string{"abcdef", "ghijkl", "mnop"}},
	}
	for _, tt := range tests {
		got := wrapLine(tt.line, tt.width, tt.indent)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("wrapLine(%q, %d) = %q, want %q", tt.line, tt.width, got, tt.want)
		}
		for _, l := range got {
			if utf8.RuneCountInString(l) > tt.width {
				t.Errorf("wrapLine(%q, %d): line %q too long", tt.line, tt.width, l)
			}
		}
	}
}

// TestTextViewsWidth runs leaks, info, segments and summary on every
// snapshot of the shared corpus and checks that their lines keep within
// 120 columns: the file's path aside, and the summary's pool table (a
// device with private pools and blocks pending free needs 126).
func TestTextViewsWidth(t *testing.T) {
	root := sharedSnapshots(t)
	var files []string
	for _, pat := range []string{"torch2.11/*/snapshot.pickle", "public/*.pickle", "torch2.11-probe/*.pickle"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		files = append(files, m...)
	}
	const width = 120
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			continue
		}
		name, _ := filepath.Rel(root, f)
		check := func(view, out string, skipTables bool) {
			for i, line := range strings.Split(out, "\n") {
				if strings.Contains(line, f) || skipTables && (strings.HasPrefix(line, "|") || strings.HasPrefix(line, "+")) {
					continue
				}
				if n := utf8.RuneCountInString(line); n > width {
					t.Errorf("%s %s line %d: %d columns: %q", name, view, i+1, n, line)
				}
			}
		}
		var reps []*analyze.LeakReport
		var stats []*analyze.MemoryStats
		for _, d := range s.Devices() {
			r, err := analyze.Replay(s, d)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := analyze.Leaks(s, r, analyze.DefaultLeakOptions(r))
			if err != nil {
				t.Fatal(err)
			}
			reps = append(reps, rep)
			stats = append(stats, analyze.CurrentStats(s, d))
		}
		var b bytes.Buffer
		if err := WriteLeaks(&b, s, reps, LeakOptions{At: "auto"}); err != nil {
			t.Fatal(err)
		}
		check("leaks", b.String(), false)
		b.Reset()
		if err := WriteInfo(&b, NewInfo(f, 0, s)); err != nil {
			t.Fatal(err)
		}
		check("info", b.String(), false)
		b.Reset()
		if err := WriteSegments(&b, NewSegments(s, s.Devices())); err != nil {
			t.Fatal(err)
		}
		check("segments", b.String(), false)
		b.Reset()
		if err := WriteSummaryText(&b, NewSummary(f, s, stats)); err != nil {
			t.Fatal(err)
		}
		check("summary", b.String(), true)
	}
}

// TestLeaksPatternStepName checks p27, whose steps come from a repeating
// allocation made under CPython frames with line numbers: the step is
// named by its first user frame, not by descrobject.c.
func TestLeaksPatternStepName(t *testing.T) {
	f := filepath.Join(sharedSnapshots(t), "public", "p27-long-churn-few-live.pickle")
	if _, err := os.Stat(f); err != nil {
		t.Skip(err)
	}
	s, err := snapshot.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analyze.Replay(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Leaks(s, r, analyze.DefaultLeakOptions(r))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Steps.Source != analyze.StepsPattern {
		t.Fatalf("steps from %v, want pattern", rep.Steps.Source)
	}
	line := leakStepsLine(newFrameTable(s), rep)
	if !strings.Contains(line, "once per step at modeling_qwen2.py:218 forward") || strings.Contains(line, ".c:") {
		t.Errorf("steps line %q, want the step named modeling_qwen2.py:218 forward", line)
	}
}
