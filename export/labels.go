package export

import (
	"fmt"
	"regexp"
	"strings"
)

// Labels are the labels an export puts on every sample (pprof) or row
// (Parquet, the Chrome trace's metadata): fixed ones (`--label
// key=value`), then ones whose value each file's path gives (`--path-label
// key=REGEX`). The zero Labels has none.
type Labels struct {
	fixed []Label
	path  []pathLabel
}

// pathLabel is one --path-label: the label key and the expression its
// value is taken from.
type pathLabel struct {
	key string
	re  *regexp.Regexp
}

// ParseLabels reads fixed ("key=value") and path ("key=REGEX") labels, as
// `snapview export --label` and `--path-label` give them. Every key must
// suit a column of the Parquet snapshots table (CheckLabel) and be given
// once, in any case. The error says which flag's value is wrong: a missing
// "=", a bad key, a key given twice, an expression that does not compile.
func ParseLabels(fixed, path []string) (Labels, error) {
	var ls Labels
	seen := map[string]bool{}
	for _, fl := range []struct {
		name string
		vals []string
	}{{"label", fixed}, {"path-label", path}} {
		for _, l := range fl.vals {
			k, v, ok := strings.Cut(l, "=")
			if !ok {
				want := "value"
				if fl.name == "path-label" {
					want = "REGEX"
				}
				return Labels{}, fmt.Errorf("--%s %q: want key=%s", fl.name, l, want)
			}
			if err := CheckLabel(k); err != nil {
				return Labels{}, fmt.Errorf("--%s %q: %v", fl.name, l, err)
			}
			if seen[strings.ToLower(k)] {
				return Labels{}, fmt.Errorf("label %s given twice", k)
			}
			seen[strings.ToLower(k)] = true
			if fl.name == "label" {
				ls.fixed = append(ls.fixed, Label{Key: k, Value: v})
				continue
			}
			re, err := regexp.Compile(v)
			if err != nil {
				return Labels{}, fmt.Errorf("--path-label %q: %v", l, err)
			}
			ls.path = append(ls.path, pathLabel{key: k, re: re})
		}
	}
	return ls, nil
}

// Keys returns the label keys, the fixed ones first, in the order given.
func (ls Labels) Keys() []string {
	var keys []string
	for _, l := range ls.fixed {
		keys = append(keys, l.Key)
	}
	for _, l := range ls.path {
		keys = append(keys, l.key)
	}
	return keys
}

// Fixed returns the fixed labels (`--label`), those every file gets alike.
func (ls Labels) Fixed() []Label {
	return append([]Label(nil), ls.fixed...)
}

// Of returns the labels of the file at path: every fixed label, then
// every path label with the value its expression finds in path (its
// first group, else the whole match; "" when it does not match).
func (ls Labels) Of(path string) []Label {
	out := ls.Fixed()
	for _, l := range ls.path {
		m := l.re.FindStringSubmatch(path)
		v := ""
		switch {
		case len(m) > 1:
			v = m[1]
		case len(m) == 1:
			v = m[0]
		}
		out = append(out, Label{Key: l.key, Value: v})
	}
	return out
}
