package kit

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestWarnFold: per-device warnings of one kind (the text with its numbers
// left out) reach the writer for the first WarnFoldKeep devices, with their
// continuation lines; the others are counted in one line at Flush. Other
// lines pass through in order, also in pieces.
func TestWarnFold(t *testing.T) {
	var b bytes.Buffer
	f := NewWarnFold(&b)
	fmt.Fprintln(f, "note: showing device 0")
	for d := range 6 {
		fmt.Fprintf(f, "warning: device %d: the replay differs (entry %d at 0x%x)\n", d, d*7, 0x1000*d)
		fmt.Fprintf(f, "warning:   detail of %d\n", d)
		if d == 4 {
			fmt.Fprintf(f, "warning: a.pickle: device %d skipped: empty\n", d)
		}
	}
	f.Write([]byte("warning: 5 of the file's devi"))
	f.Write([]byte("ces are left out\npartial"))
	f.Flush()
	want := `note: showing device 0
warning: device 0: the replay differs (entry 0 at 0x0)
warning:   detail of 0
warning: device 1: the replay differs (entry 7 at 0x1000)
warning:   detail of 1
warning: device 2: the replay differs (entry 14 at 0x2000)
warning:   detail of 2
warning: a.pickle: device 4 skipped: empty
warning: 5 of the file's devices are left out
partial
warning: the same as device 0's warning above for 3 more devices: 3, 4, 5
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(b.String(), "detail of 3") {
		t.Error("a dropped warning's continuation line was written")
	}
}
