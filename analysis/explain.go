package analysis

import (
	"context"
	"slices"

	"github.com/snapview/snapview/analyze/explain"
	"github.com/snapview/snapview/analyze/info"
	"github.com/snapview/snapview/analyze/leaks"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/whatif"
	"github.com/snapview/snapview/snapshot"
)

// ExplainStates is an Options.States for a File that explain will read:
// each device's replay captures the states at its oom entries in its one
// pass (none, and no peak state, for a trace without one).
func ExplainStates(trace []snapshot.TraceEntry) []int { return explain.OOMEntries(trace) }

// Explain returns explain's findings for devices, in that order, from the
// File's replays: per device with a trace, the states after its oom
// entries (captured by the replay when the File's States asked for them,
// else StateAt), the state at the reserved peak when there is a reserved
// gap, the leak ranking at its default moment, the what-if simulation
// when explain.NeedsWhatif says the findings use it, and for the file the
// recording's inference (Info, once). It returns the first replay error.
func (f *File) Explain(devices []int, opts explain.Options) ([]*explain.Device, error) {
	return f.ExplainPages(devices, nil, 0, opts)
}

// ExplainPages is [File.Explain] for the HTML report, which has analysed
// the devices already: pages[k] (nil: none) is devices[k]'s Page, made
// with leakTop groups kept; its states, its leak ranking (when leakTop is
// the default's, so the findings are explain's own) and its what-if
// simulation (when opts asks for no other cap) are used in place of new
// ones.
func (f *File) ExplainPages(devices []int, pages []*Page, leakTop int, opts explain.Options) ([]*explain.Device, error) {
	ins := make([]*explain.Input, len(devices))
	for k, d := range devices {
		in := &explain.Input{Snap: f.Snap, Pools: f.Pools(d)}
		ins[k] = in
		if !f.HasTrace(d) {
			continue
		}
		var page *Page
		if k < len(pages) {
			page = pages[k]
		}
		r, err := f.Replay(d)
		if err != nil {
			return nil, err
		}
		in.Replay = r
		for _, i := range explain.OOMEntries(replay.DeviceTrace(f.Snap, d)) {
			st := capturedState(r.States, i)
			if st == nil && page != nil {
				st = page.State(i)
			}
			if st == nil {
				if st, err = r.StateAt(i); err != nil {
					return nil, err
				}
			}
			in.OOMStates = append(in.OOMStates, st)
		}
		if explain.NeedsPeakState(r) {
			if st, err := r.StateAt(r.PeakReservedIndex); err == nil {
				in.PeakState = st
			}
		}
		lo := leaks.DefaultLeakOptions(r)
		if page != nil && page.Leaks != nil && leakTop == lo.Top {
			in.Leaks = page.Leaks
		} else if rep, err := leaks.Leaks(f.Snap, r, lo); err == nil {
			in.Leaks = rep
		}
		if explain.NeedsWhatif(r) {
			if page != nil && page.WhatIf != nil && opts.Whatif.Limit == 0 && opts.Whatif.Confs == nil {
				in.Whatif = page.WhatIf
			} else if w, err := f.WhatIf(d, opts.Whatif); err == nil {
				in.Whatif = w
			}
		}
	}
	inf := f.Info(devices)
	coverage := make(map[int]*info.DeviceInfo, len(inf.Devices))
	for j := range inf.Devices {
		coverage[inf.Devices[j].Device] = &inf.Devices[j]
	}
	out := make([]*explain.Device, 0, len(devices))
	for k, d := range devices {
		in := ins[k]
		in.Recording = &inf.Recording
		in.Coverage = coverage[d]
		e := explain.Explain(*in)
		e.Device = d
		explain.Unsplit(in, e, opts, func(o whatif.Options) (*whatif.Result, error) { return f.WhatIf(d, o) })
		out = append(out, e)
	}
	return out, nil
}

// State returns the state after entry i among the Page's States (nil when
// it has none there).
func (p *Page) State(i int) *replay.State { return capturedState(p.States, i) }

// capturedState returns the state after entry i among states (ascending
// by Index, as a replay captures them), nil when there is none.
func capturedState(states []*replay.State, i int) *replay.State {
	k, ok := slices.BinarySearchFunc(states, i, func(st *replay.State, i int) int { return st.Index - i })
	if !ok {
		return nil
	}
	return states[k]
}

// ExplainChosen is `snapview explain`'s view: [File.Explain] for the
// devices dc picks (DeviceChoice.Pick) that hold segments or trace
// entries, at most MaxShownDevices of them (DeviceChoice.Shown). Its notes
// are the file's warnings and Shown's; its errors Pick's, ctx's and
// Explain's.
func (f *File) ExplainChosen(ctx context.Context, dc DeviceChoice, opts explain.Options) ([]*explain.Device, []Note, error) {
	notes := fileWarnings(f.Snap)
	devices, err := dc.Pick(f.Snap)
	if err != nil {
		return nil, notes, err
	}
	have := f.Snap.Devices()
	var use []int
	for _, d := range devices {
		if slices.Contains(have, d) {
			use = append(use, d)
		}
	}
	use, shown := dc.Shown(use, "explain")
	notes = append(notes, shown...)
	if err := ctx.Err(); err != nil {
		return nil, notes, err
	}
	devs, err := f.Explain(use, opts)
	return devs, notes, err
}

// fileWarnings are the warnings the decoder left on s
// (snapshot.Snapshot.Warnings), as notes of no file: a view of one file.
func fileWarnings(s *snapshot.Snapshot) []Note {
	var notes []Note
	for _, w := range s.Warnings {
		notes = append(notes, Note{Kind: Warning, Text: w})
	}
	return notes
}
