package main

import (
	"github.com/spf13/pflag"

	"github.com/snapview/snapview/analysis"
)

// alignFlag is the --align flag of the commands over several files
// (report, ranks, diff): "time" lines their timelines up on one clock
// (time_us), "step" on their first steps (steps.AlignFirst).
type alignFlag struct {
	text string
	mode analysis.Align
}

// addAlignFlag adds --align to fs; what names what is lined up.
func addAlignFlag(fs *pflag.FlagSet, f *alignFlag, what string) {
	fs.StringVar(&f.text, "align", "time", "line up "+what+" on one clock (time: time_us) or on their first steps (step)")
}

// parse checks the flag's value: a usage error unless time or step.
func (f *alignFlag) parse() error {
	switch f.text {
	case "time":
		f.mode = analysis.AlignTime
	case "step":
		f.mode = analysis.AlignStep
	default:
		return usageErrorf("--align must be time or step, got %q", f.text)
	}
	return nil
}
