package report

import (
	"bytes"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/corpus"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/report/leakview"
	"github.com/snapview/snapview/snapshot"
)

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
				tw := kit.NewWriter(&b, width)
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
			check("leaks", func(w io.Writer) error { return leakview.WriteLeaks(w, s, reps, leakview.LeakOptions{At: "auto"}) })
			check("leaks --full", func(w io.Writer) error {
				return leakview.WriteLeaks(w, s, reps, leakview.LeakOptions{At: "auto", Full: true})
			})
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
