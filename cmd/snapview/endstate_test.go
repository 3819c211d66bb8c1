package main

import (
	"strings"
	"testing"
)

func TestWarnEndState(t *testing.T) {
	for _, tt := range []struct {
		name   string
		file   string
		devs   []int
		effect string
		diffs  []string
		want   string
	}{
		{"none", "a.pickle", nil, "figures", nil, ""},
		{"one device", "a.pickle", []int{3}, "figures", nil,
			"warning: a.pickle: device 3: the replayed end state differs from the file's segments; figures may be off\n"},
		{"no file, differences", "", []int{0}, "the state", []string{"segment at 0x10: size 2 MiB, want 20 MiB", "tab\there"},
			"warning: device 0: the replayed end state differs from the file's segments; the state may be off:\n" +
				"warning:   segment at 0x10: size 2 MiB, want 20 MiB\nwarning:   tab\\there\n"},
		{"devices", "r.pickle", []int{1, 2}, "figures", nil,
			"warning: r.pickle: 2 devices (1, 2): the replayed end state differs from the file's segments; figures may be off\n"},
		{"many devices", "r.pickle", []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "figures", nil,
			"warning: r.pickle: 10 devices (0, 1, 2, 3, 4, 5, 6, 7, …): the replayed end state differs from the file's segments; figures may be off\n"},
	} {
		var b strings.Builder
		warnEndState(&b, tt.file, tt.devs, tt.effect, tt.diffs)
		if got := b.String(); got != tt.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tt.name, got, tt.want)
		}
	}
}
