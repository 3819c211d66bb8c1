package export

import (
	"fmt"
	"io"

	"github.com/google/pprof/profile"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/replay"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/snapshot"
)

// This file holds what `snapview export` computes of each file it reads,
// format by format, with the notes the command writes on standard error.

// States is StatesAt for the file named name, with the notes for the
// user: a device the allocator was never used on, or one that lacks the
// moment (an oom on a device without one), is left out with a note; a
// replay that ends in a state other than the file's segments gets
// analysis.EndStateNote. The notes of devices left out for lacking the
// moment come last. When every device lacks it, the error is the first
// one's *analysis.AbsentError and no note repeats it. Other errors are
// StatesAt's (a moment that does not apply: its *steps.MomentError); the
// notes met until then come back with any error.
func States(an *analysis.File, at steps.Moment, label, name string) ([]DeviceState, []analysis.Note, error) {
	devs, err := StatesAt(an, at, label)
	var (
		out           []DeviceState
		notes, absent []analysis.Note
		firstErr      error
	)
	for _, da := range devs {
		switch {
		case da.Idle:
			notes = append(notes, analysis.Note{Kind: analysis.Info, File: name,
				Text: fmt.Sprintf("device %d left out: the allocator was never used on it (a lone snapshot entry)", da.Device)})
			continue
		case da.Result != nil && !da.Result.Check.Equal:
			notes = append(notes, analysis.EndStateNote(name, []int{da.Device}, "figures", nil))
		}
		if da.Absent != nil {
			a := analysis.MomentErr(an.Snap, da.Device, at, da.Absent)
			if firstErr == nil {
				firstErr = a
			}
			absent = append(absent, analysis.Note{Kind: analysis.Info, File: name,
				Text: fmt.Sprintf("device %d left out: %v", da.Device, a)})
		}
		if da.State != nil {
			out = append(out, *da.State)
		}
	}
	switch {
	case err != nil:
		return nil, notes, err
	case len(out) == 0 && firstErr != nil:
		return nil, notes, firstErr // the error says it: no note besides
	}
	return out, append(notes, absent...), nil
}

// fileProfile is the pprof profile of the file an analyses at the moment
// at (named label), o.Source its name: Profile over States. The notes and
// errors are States' and Profile's.
func fileProfile(an *analysis.File, at steps.Moment, label string, o ProfileOptions) (*profile.Profile, []analysis.Note, error) {
	states, notes, err := States(an, at, label, o.Source)
	if err != nil {
		return nil, notes, err
	}
	p, err := Profile(an.Snap, states, o)
	return p, notes, err
}

// mergeProfiles merges the profiles of several files into one, as `go tool
// pprof` merges the profiles it is given, and, when bases is not nil,
// subtracts the merge of bases from it (DiffProfile). Errors are
// profile.Merge's (profiles of different sample types) and DiffProfile's.
func mergeProfiles(profs, bases []*profile.Profile) (*profile.Profile, error) {
	p, err := profile.Merge(profs)
	if err != nil {
		return nil, fmt.Errorf("merging the profiles of %d files: %w", len(profs), err)
	}
	if bases == nil {
		return p, nil
	}
	base, err := profile.Merge(bases)
	if err != nil {
		return nil, err
	}
	return DiffProfile(p, base)
}

// foldedFile is one file's folded stacks: a list of segments per state
// shown (the file's own segments, or each device's state at a moment).
type foldedFile struct {
	Snap  *snapshot.Snapshot
	Name  string
	Parts [][]FoldedSegment
}

// newFoldedFile returns the folded stacks of the file an analyses, named
// name: with at nil the segments the file holds (its end state, no
// replay); else each device's state at the moment *at (named label), as
// States finds them, with States' notes and errors.
func newFoldedFile(an *analysis.File, at *steps.Moment, label, name string) (foldedFile, []analysis.Note, error) {
	ff := foldedFile{Snap: an.Snap, Name: name}
	if at == nil {
		ff.Parts = [][]FoldedSegment{FileSegments(an.Snap)}
		return ff, nil, nil
	}
	states, notes, err := States(an, *at, label, name)
	if err != nil {
		return ff, notes, err
	}
	for _, ds := range states {
		ff.Parts = append(ff.Parts, StateSegments(ds.State))
	}
	return ff, notes, nil
}

// writeFoldedFiles writes the folded stacks of files to w (WriteFolded,
// with o). With several files each line starts with a frame naming its
// file (o.Root), so that the flame graph keeps the programs apart; a file
// given twice gets "#2" on its second frame: the same frame would add its
// bytes up as one program's. Errors are w's.
func writeFoldedFiles(w io.Writer, files []foldedFile, o FoldedOptions) error {
	seen := map[string]int{}
	for _, f := range files {
		o.Root = ""
		if len(files) > 1 {
			seen[f.Name]++
			o.Root = f.Name
			if k := seen[f.Name]; k > 1 {
				o.Root = fmt.Sprintf("%s#%d", f.Name, k)
			}
		}
		for _, segs := range f.Parts {
			if err := WriteFolded(w, f.Snap, segs, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// replays returns the File's replay of each of devices, and an
// analysis.EndStateNote for each that ends in a state other than the
// file's segments (effect "figures"). The error is the first replay's
// that fails, with the replays and notes until then.
func replays(an *analysis.File, name string, devices []int) ([]*replay.Result, []analysis.Note, error) {
	var (
		out   []*replay.Result
		notes []analysis.Note
	)
	for _, d := range devices {
		r, err := an.Replay(d)
		if err != nil {
			return out, notes, err
		}
		if !r.Check.Equal {
			notes = append(notes, analysis.EndStateNote(name, []int{r.Device}, "figures", nil))
		}
		out = append(out, r)
	}
	return out, notes, nil
}

// newChromeInput returns the file an analyses, named name, as
// WriteChromeTrace reads it: the replay of each device with trace
// entries, with replays' notes and errors.
func newChromeInput(an *analysis.File, name string) (ChromeInput, []analysis.Note, error) {
	var devs []int
	for d := range an.Snap.Traces {
		if an.HasTrace(d) {
			devs = append(devs, d)
		}
	}
	rs, notes, err := replays(an, name, devs)
	return ChromeInput{Snapshot: an.Snap, Name: name, Results: rs}, notes, err
}

// addFile appends the file an analyses, named path, to the dataset with
// the replay of each of its devices (Add), and returns the replays'
// notes. Errors are the replays' and Add's.
func (d *Dataset) addFile(an *analysis.File, path string, labels []Label) ([]analysis.Note, error) {
	rs, notes, err := replays(an, path, an.Snap.Devices())
	if err != nil {
		return notes, err
	}
	return notes, d.Add(an.Snap, path, labels, rs)
}
