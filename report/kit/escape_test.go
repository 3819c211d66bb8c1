package kit

import "testing"

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain ascii", "plain ascii"},
		{"naïve 日本語 ≥2.3", "naïve 日本語 ≥2.3"},
		{"\x1b[2Jclear", `\x1b[2Jclear`},
		{"bell\a cr\r nl\n tab\t nul\x00 del\x7f", `bell\a cr\r nl\n tab\t nul\x00 del\x7f`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"rlo \u202eevil\u202c lri \u2066x\u2069", `rlo \u202eevil\u202c lri \u2066x\u2069`},
		{"zwj a\u200db", `zwj a\u200db`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"ls \u2028", `ls \u2028`},
		{`C:\path\file.py`, `C:\path\file.py`},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	s := "nothing to escape"
	if got := Escape(s); got != s {
		t.Errorf("Escape changed %q", s)
	}
}
