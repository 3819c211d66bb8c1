package export

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLabels(t *testing.T) {
	for _, tc := range []struct {
		name        string
		fixed, path []string
		keys        []string
		of          []Label // of "runs/bs16/rank3.pickle"
		err         string
	}{
		{name: "none"},
		{
			name:  "fixed and path",
			fixed: []string{"run=a", "empty="},
			path:  []string{"bs=bs(\\d+)", "rank=rank\\d", "gone=nowhere"},
			keys:  []string{"run", "empty", "bs", "rank", "gone"},
			of:    []Label{{"run", "a"}, {"empty", ""}, {"bs", "16"}, {"rank", "rank3"}, {"gone", ""}},
		},
		{name: "no =", fixed: []string{"run"}, err: `--label "run": want key=value`},
		{name: "path no =", path: []string{"run"}, err: `--path-label "run": want key=REGEX`},
		{name: "bad key", fixed: []string{"1x=a"}, err: `--label "1x=a": label key "1x": want letters, digits and _, not first a digit`},
		{name: "twice", fixed: []string{"Run=a"}, path: []string{"run=x"}, err: "label run given twice"},
		{name: "bad regexp", path: []string{"x=("}, err: "--path-label \"x=(\": error parsing regexp: missing closing ): `(`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, err := ParseLabels(tc.fixed, tc.path)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.keys, ls.Keys()); diff != "" {
				t.Errorf("Keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.of, ls.Of("runs/bs16/rank3.pickle")); diff != "" {
				t.Errorf("Of (-want +got):\n%s", diff)
			}
			if n := len(ls.Fixed()); n != len(tc.fixed) {
				t.Errorf("Fixed has %d labels, want %d", n, len(tc.fixed))
			}
		})
	}
}
