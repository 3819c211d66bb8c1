package kit

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWrapLine(t *testing.T) {
	tests := []struct {
		line   string
		width  int
		indent string
		want   []string
	}{
		{"short", 10, "  ", []string{"short"}},
		{"grows every step, never freed: likely leak", 20, "", []string{"grows every step,", "never freed: likely", "leak"}},
		{"  /home/x/a/very/long/path/model.py:12 forward", 24, "      ",
			[]string{"  /home/x/a/very/long/", "      path/model.py:12", "      forward"}},
		{`  C:\x\y\z.py:3 f`, 12, "    ", []string{`  C:\x\y\`, `    z.py:3 f`}},
		{"abcdefghijklmnop", 6, "", []string{"abcdef", "ghijkl", "mnop"}},
	}
	for _, tt := range tests {
		got := WrapLine(tt.line, tt.width, tt.indent)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("WrapLine(%q, %d) = %q, want %q", tt.line, tt.width, got, tt.want)
		}
		for _, l := range got {
			if utf8.RuneCountInString(l) > tt.width {
				t.Errorf("WrapLine(%q, %d): line %q too long", tt.line, tt.width, l)
			}
		}
	}
}

func TestTextWriter(t *testing.T) {
	var b bytes.Buffer
	tw := NewWriter(&b, 60)
	in := "short line\n" +
		"  a long indented paragraph that goes on and on past the sixty columns of the writer\n" +
		"+----+ a table rule that is long but must not be wrapped, ever, whatever its length is\n" +
		"/a/very/long/path/without/any/spaces/in/it/at/all/that/still/needs/to/fit/somewhere.py:12\n" +
		"no newline at the end"
	if _, err := io.WriteString(tw, in[:30]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(tw, in[30:]); err != nil {
		t.Fatal(err)
	}
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "short line\n" +
		"  a long indented paragraph that goes on and on past the\n" +
		"  sixty columns of the writer\n" +
		"+----+ a table rule that is long but must not be wrapped, ever, whatever its length is\n" +
		"/a/very/long/path/without/any/spaces/in/it/at/all/that/\n" +
		"still/needs/to/fit/somewhere.py:12\n" +
		"no newline at the end"
	if got := b.String(); got != want {
		t.Errorf("Writer wrote\n%s\nwant\n%s", got, want)
	}
	if w := NewWriter(io.Discard, 10).Width(); w != MinWidth {
		t.Errorf("width 10 gives %d, want MinWidth %d", w, MinWidth)
	}
	if w := NewWriter(io.Discard, 0).Width(); w != DefaultWidth {
		t.Errorf("width 0 gives %d, want DefaultWidth %d", w, DefaultWidth)
	}
}
