package kit

import (
	"fmt"
	"io"
	"strings"

	"github.com/snapview/snapview/analysis"
	"github.com/snapview/snapview/internal/units"
)

// notePrefix is how each analysis.NoteKind is introduced.
var notePrefix = [...]string{analysis.Warning: "warning: ", analysis.Info: "note: ", analysis.Hint: "hint: "}

// WriteNotes writes notes to w, one line each (and a line per detail):
// "warning: FILE: device 3: text", "note: …", "hint: …". File names, text
// and details are escaped (Escape). A note with a trailing detail list
// ends its line with a colon. It returns the first write error.
func WriteNotes(w io.Writer, notes []analysis.Note) error {
	for _, n := range notes {
		if err := writeNote(w, n); err != nil {
			return err
		}
	}
	return nil
}

func writeNote(w io.Writer, n analysis.Note) error {
	var b strings.Builder
	kind := notePrefix[n.Kind]
	b.WriteString(kind)
	if n.File != "" {
		b.WriteString(Escape(n.File))
		b.WriteString(": ")
	}
	switch len(n.Devices) {
	case 0:
	case 1:
		fmt.Fprintf(&b, "device %d: ", n.Devices[0])
	default:
		list := units.IntList(n.Devices[:min(len(n.Devices), 8)])
		if len(n.Devices) > 8 {
			list += ", …"
		}
		fmt.Fprintf(&b, "%d devices (%s): ", len(n.Devices), list)
	}
	b.WriteString(Escape(n.Text))
	if len(n.Details) > 0 {
		b.WriteString(":")
	}
	b.WriteString("\n")
	for _, d := range n.Details {
		b.WriteString(kind)
		b.WriteString("  ")
		b.WriteString(Escape(d))
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
