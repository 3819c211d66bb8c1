package main

import (
	"io"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/report/kit"
)

// warnEndState writes analysis.EndStateNote for devs to w (nothing when
// devs is empty).
func warnEndState(w io.Writer, file string, devs []int, effect string, differences []string) {
	if len(devs) == 0 {
		return
	}
	kit.WriteNotes(w, []analysis.Note{analysis.EndStateNote(file, devs, effect, differences)})
}
