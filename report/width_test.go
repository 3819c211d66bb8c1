package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/corpus"
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

// TestTextViewsWidth runs leaks, info, segments, summary and state on
// every snapshot of the shared corpus at 80 and 120 columns (as
// COLUMNS=80 and the default for a pipe give) and checks that every line
// keeps within the width, the file's path aside.
func TestTextViewsWidth(t *testing.T) {
	root := sharedSnapshots(t)
	var files []string
	for _, pat := range []struct {
		glob string
		min  int
	}{{"torch2.11/*/snapshot.pickle", 17}, {"public/*.pickle", 34}, {"torch2.11-probe/*.pickle", 13}} {
		files = append(files, corpus.Match(t, root, pat.glob, pat.min)...)
	}
	loaded := 0
	defer func() { corpus.AtLeast(t, "snapshots loaded", loaded, 64) }()
	for _, f := range files {
		s, err := snapshot.Load(f)
		if err != nil {
			continue
		}
		loaded++
		name, _ := filepath.Rel(root, f)
		var reps []*leaks.LeakReport
		var all []*stats.MemoryStats
		var states []*StateView
		for _, d := range s.Devices() {
			r, err := replay.Run(s, d, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := leaks.Leaks(s, r, leaks.DefaultLeakOptions(r))
			if err != nil {
				t.Fatal(err)
			}
			reps = append(reps, rep)
			all = append(all, stats.CurrentStats(s, d))
			for _, at := range append([]int{r.PeakIndex}, r.OOMs...) {
				if at < 0 {
					continue
				}
				st, err := r.StateAt(at)
				if err != nil {
					t.Fatal(err)
				}
				states = append(states, NewStateView(s, r, st, "peak", StateOptions{Top: 10, Frames: 12}))
			}
		}
		for _, width := range []int{80, 120} {
			check := func(view string, write func(w io.Writer) error) {
				var b bytes.Buffer
				tw := NewTextWriter(&b, width)
				if err := write(tw); err != nil {
					t.Fatal(err)
				}
				if err := tw.Flush(); err != nil {
					t.Fatal(err)
				}
				for i, line := range strings.Split(b.String(), "\n") {
					if strings.Contains(line, f) {
						continue
					}
					if n := utf8.RuneCountInString(line); n > width {
						t.Errorf("%s %s at %d columns, line %d: %d columns: %q", name, view, width, i+1, n, line)
					}
				}
			}
			check("leaks", func(w io.Writer) error { return WriteLeaks(w, s, reps, LeakOptions{At: "auto"}) })
			check("leaks --full", func(w io.Writer) error { return WriteLeaks(w, s, reps, LeakOptions{At: "auto", Full: true}) })
			check("info", func(w io.Writer) error { return WriteInfo(w, NewInfo(f, 0, s.Format, info.Inspect(s, nil, nil))) })
			check("segments", func(w io.Writer) error { return WriteSegments(w, NewSegments(s, s.Devices())) })
			check("summary", func(w io.Writer) error {
				return WriteSummaryText(w, NewSummary(f, analysis.New(s, analysis.Options{}), all))
			})
			for _, v := range states {
				check("state", func(w io.Writer) error { return WriteState(w, v) })
			}
		}
	}
}

func TestTextWriter(t *testing.T) {
	var b bytes.Buffer
	tw := NewTextWriter(&b, 60)
	in := "short line\n" +
		"  a long indented paragraph that goes on and on past the sixty columns of the writer\n" +
		"+----+ a table rule that is long but must not be wrapped, ever, whatever its length is\n" +
		"/a/very/long/path/without/any/spaces/in/it/at/all/that/still/needs/to/fit/somewhere.py:12\n" +
		"no newline at the end"
	if _, err := io.WriteString(tw, in[:30]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(tw, in[30:]); err != nil {
		t.Fatal(err)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "short line\n" +
		"  a long indented paragraph that goes on and on past the\n" +
		"  sixty columns of the writer\n" +
		"+----+ a table rule that is long but must not be wrapped, ever, whatever its length is\n" +
		"/a/very/long/path/without/any/spaces/in/it/at/all/that/\n" +
		"still/needs/to/fit/somewhere.py:12\n" +
		"no newline at the end"
	if got := b.String(); got != want {
		t.Errorf("TextWriter wrote\n%s\nwant\n%s", got, want)
	}
	if w := NewTextWriter(io.Discard, 10).Width(); w != MinWidth {
		t.Errorf("width 10 gives %d, want MinWidth %d", w, MinWidth)
	}
	if w := NewTextWriter(io.Discard, 0).Width(); w != DefaultWidth {
		t.Errorf("width 0 gives %d, want DefaultWidth %d", w, DefaultWidth)
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
	r, err := replay.Run(s, 0, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := leaks.Leaks(s, r, leaks.DefaultLeakOptions(r))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Steps.Source != steps.StepsPattern {
		t.Fatalf("steps from %v, want pattern", rep.Steps.Source)
	}
	line := leakStepsLine(NewFrameTable(s), rep, steps.StepsAuto)
	if !strings.Contains(line, "once per step at modeling_qwen2.py:218 forward") || strings.Contains(line, ".c:") {
		t.Errorf("steps line %q, want the step named modeling_qwen2.py:218 forward", line)
	}
}
