package analysis

import "github.com/snapview/snapview/analyze/replay"

// NoteKind says how a Note is introduced on standard error.
type NoteKind int

const (
	// Warning is a figure or part of the input that may be off or is
	// left out: "warning: ".
	Warning NoteKind = iota
	// Info is what the reader should know to read the output right:
	// "note: ".
	Info
	// Hint is a flag or command that shows more: "hint: ".
	Hint
)

// Note is one line a view has for standard error, returned as data by the
// builders below cmd, so that only cmd writes to standard error (with
// report/kit.WriteNotes, which also folds a warning repeated over many
// devices). Text and Details come from the file and are escaped when they
// are written.
type Note struct {
	Kind NoteKind
	// File names the file the note is about, before the text ("FILE: ");
	// "" when the command reads one file and its notes name none.
	File string
	// Devices are the devices the note is about: one is written "device
	// N: ", more "K devices (a, b, …): " (at most 8 listed); none, no
	// prefix.
	Devices []int
	// Text is the note itself, without the kind's prefix.
	Text string
	// Details follow on lines of their own ("warning:   detail").
	Details []string
}

// EndStateNote is the warning that the replay of devs ends in a state
// other than the file's segments (replay.Result.Check not Equal), so the
// figures drawn from it may be off: "warning: FILE: device 3: the replayed
// end state differs from the file's segments; figures may be off". effect
// says what may be off ("figures", "the state", "live allocations");
// differences, when given, are its Details (replay.Check.Differences).
func EndStateNote(file string, devs []int, effect string, differences []string) Note {
	return Note{
		Kind:    Warning,
		File:    file,
		Devices: devs,
		Text:    replay.EndStateDiffers + "; " + effect + " may be off",
		Details: differences,
	}
}
