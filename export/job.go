package export

import (
	"context"
	"io"

	"github.com/google/pprof/profile"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/atomicfile"
)

// Job is one `snapview export`: the files to read, in order, and what to
// make of them.
type Job struct {
	// Format is "pprof", "folded", "chrome-trace" or "parquet".
	Format string
	Files  []string
	// At is the moment of pprof and folded, AtText as the user wrote it
	// (the profile's comments name it). Folded without AtSet writes the
	// segments each file holds, its end state, with no replay.
	At     steps.Moment
	AtText string
	AtSet  bool
	// Base, when Diff is set (pprof): the profile of the files Base (else
	// Files) at BaseAt (else At) is subtracted. BaseAtText is "" when
	// BaseAt was not given.
	Diff       bool
	Base       []string
	BaseAt     steps.Moment
	BaseAtText string
	Labels     Labels
	Folded     FoldedOptions
}

// Open reads the file at path and hands f its analysis and the name
// messages give it ("<stdin>" for standard input); it writes the notes f
// returns, and returns f's error. Reading files is the caller's.
type Open func(path string, f func(an *analysis.File, name string) ([]analysis.Note, error)) error

// Output is what a Job makes: Write writes the one file of pprof, folded
// and chrome-trace; Tables are Parquet's (nil for the others).
type Output struct {
	Write  func(io.Writer) error
	Tables []Table
}

// Run reads the job's files through open, one at a time, and returns
// what to write of them. Errors: ctx's between two files, open's, those
// of the format's builder (States, Profile, Dataset.Add; a moment of
// --base-at as a *steps.FlagError naming that flag) and
// mergeProfiles'.
func (j *Job) Run(ctx context.Context, open Open) (Output, error) {
	each := func(files []string, f func(an *analysis.File, name string) ([]analysis.Note, error)) error {
		for _, file := range files {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := open(file, f); err != nil {
				return err
			}
		}
		return nil
	}
	switch j.Format {
	case "pprof":
		return j.pprof(each)
	case "folded":
		var at *steps.Moment
		if j.AtSet {
			at = &j.At
		}
		var files []foldedFile
		err := each(j.Files, func(an *analysis.File, name string) ([]analysis.Note, error) {
			ff, notes, err := newFoldedFile(an, at, j.AtText, name)
			files = append(files, ff)
			return notes, err
		})
		return Output{Write: func(w io.Writer) error { return writeFoldedFiles(w, files, j.Folded) }}, err
	case "chrome-trace":
		var inputs []ChromeInput
		err := each(j.Files, func(an *analysis.File, name string) ([]analysis.Note, error) {
			in, notes, err := newChromeInput(an, name)
			inputs = append(inputs, in)
			return notes, err
		})
		return Output{Write: func(w io.Writer) error { return WriteChromeTrace(w, inputs, j.Labels.Fixed()) }}, err
	}
	ds := NewDataset(j.Labels.Keys())
	err := each(j.Files, func(an *analysis.File, name string) ([]analysis.Note, error) {
		return ds.addFile(an, name, j.Labels.Of(name))
	})
	if err != nil {
		return Output{}, err
	}
	tables, err := ds.Tables()
	return Output{Tables: tables}, err
}

// pprof is Run for the pprof format.
func (j *Job) pprof(each func([]string, func(*analysis.File, string) ([]analysis.Note, error)) error) (Output, error) {
	profiles := func(files []string, at steps.Moment, atText, flag string) ([]*profile.Profile, error) {
		var profs []*profile.Profile
		err := each(files, func(an *analysis.File, name string) ([]analysis.Note, error) {
			p, notes, err := fileProfile(an, at, atText, ProfileOptions{Source: name, FileLabel: len(files) > 1, Labels: j.Labels.Of(name)})
			profs = append(profs, p)
			if err != nil && flag != "" {
				err = &steps.FlagError{Flag: flag, Err: err}
			}
			return notes, err
		})
		return profs, err
	}
	profs, err := profiles(j.Files, j.At, j.AtText, "")
	if err != nil {
		return Output{}, err
	}
	var bases []*profile.Profile
	if j.Diff {
		files, at, atText, flag := j.Files, j.At, j.AtText, ""
		if len(j.Base) > 0 {
			files = j.Base
		}
		if j.BaseAtText != "" {
			at, atText, flag = j.BaseAt, j.BaseAtText, "--base-at"
		}
		if bases, err = profiles(files, at, atText, flag); err != nil {
			return Output{}, err
		}
	}
	p, err := mergeProfiles(profs, bases)
	if err != nil {
		return Output{}, err
	}
	return Output{Write: p.Write}, nil
}

// SetFiles are the Parquet tables as the files of one folder, "NAME.parquet"
// each, for atomicfile.WriteSet: written as one set, or not at all.
func (o Output) SetFiles() []atomicfile.SetFile {
	files := make([]atomicfile.SetFile, len(o.Tables))
	for i, t := range o.Tables {
		files[i] = atomicfile.SetFile{Name: t.Name + ".parquet", Write: t.Write}
	}
	return files
}
