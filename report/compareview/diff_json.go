package compareview

import (
	"io"

	"github.com/snapview/snapview/analyze/compare"
	"github.com/snapview/snapview/report/kit"
	"github.com/snapview/snapview/snapshot"
)

// The --json schema of `snapview diff` (documented in its --help). Sizes
// are bytes; entries index the device's trace (-1: before the first
// entry).
type diffJSON struct {
	Base      diffSideJSON        `json:"base"`
	New       diffSideJSON        `json:"new"`
	Settings  []diffSettingJSON   `json:"settings"`
	Figures   []diffFigureJSON    `json:"figures"`
	Stacks    []diffStackJSON     `json:"stacks"`
	Recording []diffRecordingJSON `json:"recording"`
	Notes     []string            `json:"notes"`
	// Align is where the moments fall with the sides' first steps lined
	// up (--align step); left out without it.
	Align *diffAlignJSON `json:"align,omitempty"`
}

// diffAlignJSON is the clock of --align step: each side's time_us moved
// by its shift (microseconds), and the new moment's time minus the base
// moment's on it (null when a side is taken before its first entry).
type diffAlignJSON struct {
	On             string `json:"on"`
	BaseShiftUS    int64  `json:"base_shift_us"`
	NewShiftUS     int64  `json:"new_shift_us"`
	NewMinusBaseUS *int64 `json:"new_minus_base_us"`
}

type diffSideJSON struct {
	File   string `json:"file"`
	Device int    `json:"device"`
	// At is the moment as given ("peak", "step:3"); Entry the trace entry
	// it resolved to.
	At    string `json:"at"`
	Entry int    `json:"entry"`
	// Step is the training step holding Entry (left out when no steps
	// were found); RecordFunction the record_function ranges open then,
	// outermost first (left out when none).
	Step           *int     `json:"step,omitempty"`
	RecordFunction []string `json:"record_function,omitempty"`
	// TimeUS is Entry's time_us in microseconds, on the one clock of the
	// recordings (moved by align's shift with --align step); left out when
	// the trace has no time_us or the moment no entry.
	TimeUS *int64 `json:"time_us,omitempty"`
}

type diffSettingJSON struct {
	Key  string `json:"key"`
	Base string `json:"base"`
	New  string `json:"new"`
}

type diffFigureJSON struct {
	Name      string `json:"name"`
	Base      int64  `json:"base"`
	New       int64  `json:"new"`
	Delta     int64  `json:"delta"`
	Exactness string `json:"exactness"`
}

type diffStackJSON struct {
	Key                string          `json:"key"`
	Frames             []diffFrameJSON `json:"frames"`
	BaseBytes          int64           `json:"base_bytes"`
	NewBytes           int64           `json:"new_bytes"`
	DeltaBytes         int64           `json:"delta_bytes"`
	BaseRequestedBytes *int64          `json:"base_requested_bytes"` // null when the side's requested sizes are unknown
	NewRequestedBytes  *int64          `json:"new_requested_bytes"`
	BaseCount          int             `json:"base_count"`
	NewCount           int             `json:"new_count"`
	Status             string          `json:"status"`
}

type diffFrameJSON struct {
	Filename string `json:"filename"`
	Line     int64  `json:"line"`
	Name     string `json:"name"`
}

type diffRecordingJSON struct {
	What string `json:"what"`
	Base string `json:"base"`
	New  string `json:"new"`
}

func framesJSON(frames []snapshot.Frame) []diffFrameJSON {
	out := make([]diffFrameJSON, len(frames))
	for i, f := range frames {
		out[i] = diffFrameJSON{Filename: f.Filename, Line: f.Line, Name: f.Name}
	}
	return out
}

func diffSide(s *compare.Side, at string) diffSideJSON {
	j := diffSideJSON{File: s.File, Device: s.Device, At: at, Entry: s.At, RecordFunction: s.Ranges}
	if s.Step >= 0 {
		step := s.Step
		j.Step = &step
	}
	if s.HasTime && s.At >= 0 {
		t := s.AtUS
		j.TimeUS = &t
	}
	return j
}

// diffToJSON converts a Diff; every stack is listed.
func diffToJSON(d *compare.Diff, o DiffOptions) diffJSON {
	j := diffJSON{
		Base: diffSide(d.Base, o.BaseAt), New: diffSide(d.New, o.NewAt),
		Settings: []diffSettingJSON{}, Figures: []diffFigureJSON{}, Stacks: []diffStackJSON{},
		Recording: []diffRecordingJSON{}, Notes: append([]string{}, d.Notes...),
	}
	for _, s := range d.Settings {
		j.Settings = append(j.Settings, diffSettingJSON{Key: s.Key, Base: s.Base, New: s.New})
	}
	for _, f := range d.Figures {
		j.Figures = append(j.Figures, diffFigureJSON{Name: f.Name, Base: f.Base, New: f.New, Delta: f.Delta, Exactness: f.Exactness.String()})
	}
	for _, s := range d.Stacks {
		j.Stacks = append(j.Stacks, diffStackJSON{
			Key: s.Key, Frames: framesJSON(s.Frames),
			BaseBytes: s.BaseBytes, NewBytes: s.NewBytes, DeltaBytes: s.DeltaBytes,
			BaseRequestedBytes: kit.RequestedJSON(s.BaseRequested, d.Base.Stats.Known), NewRequestedBytes: kit.RequestedJSON(s.NewRequested, d.New.Stats.Known),
			BaseCount: s.BaseCount, NewCount: s.NewCount, Status: string(s.Status),
		})
	}
	for _, r := range d.Recording {
		j.Recording = append(j.Recording, diffRecordingJSON{What: r.What, Base: r.Base, New: r.New})
	}
	if d.Base.Aligned && d.New.Aligned {
		j.Align = &diffAlignJSON{On: "step", BaseShiftUS: d.Base.ShiftUS, NewShiftUS: d.New.ShiftUS}
		if d.Base.At >= 0 && d.New.At >= 0 {
			gap := d.New.AtUS - d.Base.AtUS
			j.Align.NewMinusBaseUS = &gap
		}
	}
	return j
}

// WriteDiffJSON writes a diff as `snapview diff --json` does: every stack,
// whatever o.Top says.
func WriteDiffJSON(w io.Writer, d *compare.Diff, o DiffOptions) error {
	return kit.WriteJSON(w, diffToJSON(d, o))
}
