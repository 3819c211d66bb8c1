package report

import "testing"

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "entry", "1 entry"},
		{0, "entry", "0 entries"},
		{2, "oom entry", "2 oom entries"},
		{1234, "segment", "1,234 segments"},
		{2, "key", "2 keys"},
		{3, "day", "3 days"},
	} {
		if got := plural(tt.n, tt.noun); got != tt.want {
			t.Errorf("plural(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
	for _, tt := range []struct {
		k, n int
		want string
	}{
		{1, 1, "the only trace entry"},
		{3, 3, "all 3 trace entries"},
		{1, 3, "1 of 3 trace entries"},
		{0, 2, "0 of 2 trace entries"},
	} {
		if got := ofAll(tt.k, tt.n, "trace entry"); got != tt.want {
			t.Errorf("ofAll(%d, %d) = %q, want %q", tt.k, tt.n, got, tt.want)
		}
	}
}
