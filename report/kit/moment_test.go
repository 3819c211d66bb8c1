package kit

import "testing"

func TestMomentWords(t *testing.T) {
	for _, c := range []struct{ at, want string }{
		{"peak", "the allocated peak"},
		{"oom", "oom"},
		{"oom:2", "oom:2"},
		{"entry:85", "entry:85"},
		{"step:last", "step:last"},
		{"end", "end"},
	} {
		if got := MomentWords(c.at); got != c.want {
			t.Errorf("MomentWords(%q) = %q, want %q", c.at, got, c.want)
		}
	}
}
