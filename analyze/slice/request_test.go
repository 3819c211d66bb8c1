package slice_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/slice"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// TestRequestWindow: each request gives its window, the replay mode its
// moments need, or the error that names the flag at fault.
func TestRequestWindow(t *testing.T) {
	raw, err := snapshot.Load(filepath.Join("..", "..", "testdata", "snapshots", "mlp_train.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := replay.Complete(raw)
	r, err := replay.Run(s, 0, replay.Options{Mode: replay.Full})
	if err != nil {
		t.Fatal(err)
	}
	n := len(s.Traces[0])
	m := func(text string) *steps.Moment {
		mm, err := steps.ParseMoment(text)
		if err != nil {
			t.Fatal(err)
		}
		return &mm
	}
	for _, tc := range []struct {
		name string
		q    slice.Request
		mode replay.Mode
		want slice.Window
		flag string // a *FlagError of this flag
		win  bool   // a *WindowError
	}{
		{name: "whole", q: slice.Request{}, mode: replay.StatsOnly, want: slice.Window{From: 0, To: n - 1}},
		{name: "from to", q: slice.Request{From: m("entry:5"), To: m("entry:40")}, mode: replay.StatsOnly, want: slice.Window{From: 5, To: 40}},
		{name: "around peak", q: slice.Request{Around: m("peak"), Entries: 10}, mode: replay.Peaks, want: slice.Around(0, r.PeakIndex, 10, n)},
		{name: "step", q: slice.Request{From: m("peak"), To: m("step:99")}, mode: replay.Full, flag: "--to"},
		{name: "reversed", q: slice.Request{From: m("entry:40"), To: m("entry:5"), FromText: "entry:40", ToText: "entry:5"}, mode: replay.StatsOnly, win: true},
		{name: "past", q: slice.Request{From: m("entry:99999999")}, mode: replay.StatsOnly, flag: "--from"},
		{name: "no oom", q: slice.Request{Around: m("oom")}, mode: replay.Peaks, flag: "--around"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.q.Mode(); got != tc.mode {
				t.Errorf("Mode = %v, want %v", got, tc.mode)
			}
			w, err := tc.q.Window(s, r)
			var (
				fe *slice.FlagError
				we *slice.WindowError
			)
			switch {
			case tc.flag != "":
				if !errors.As(err, &fe) || fe.Flag != tc.flag {
					t.Errorf("Window = %v, %v; want a FlagError of %s", w, err, tc.flag)
				}
			case tc.win:
				if !errors.As(err, &we) {
					t.Errorf("Window = %v, %v; want a WindowError", w, err)
				}
			case err != nil || w != tc.want:
				t.Errorf("Window = %v, %v; want %v", w, err, tc.want)
			}
		})
	}
}
