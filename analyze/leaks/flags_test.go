package leaks

import (
	"testing"

	"github.com/snapview/snapview/analyze/steps"
)

// TestFlagsOptions: the flags' defaults read into the options leaks uses,
// each flag's values, and each fault's error naming its flag.
func TestFlagsOptions(t *testing.T) {
	def := Flags{Top: 10, MinBytes: "0", Sort: "score", Steps: "auto", By: "stack"}
	lo, err := def.Options()
	if err != nil || lo.Top != 10 || lo.MinBytes != 0 || lo.Sort != LeakSortScore || lo.Steps != steps.StepsAuto ||
		lo.Focus != nil || lo.Ignore != nil || lo.ByAnnotation || lo.ByRegion || lo.Fold {
		t.Fatalf("defaults: %+v, %v", lo, err)
	}
	set := def
	set.MinBytes, set.Sort, set.Steps, set.Focus, set.Ignore, set.Fold, set.By = "1MiB", "bytes", "slices", "model", "torch", true, "annotation"
	lo, err = set.Options()
	if err != nil || lo.MinBytes != 1<<20 || lo.Sort != LeakSortBytes || lo.Steps != steps.StepsSlices ||
		lo.Focus.String() != "model" || lo.Ignore.String() != "torch" || !lo.Fold || !lo.ByAnnotation {
		t.Errorf("set: %+v, %v", lo, err)
	}
	if lo, err := (Flags{Top: 1, MinBytes: "0", Sort: "count", Steps: "auto", By: "region"}).Options(); err != nil || !lo.ByRegion {
		t.Errorf("--by region: %+v, %v", lo, err)
	}
	for _, tc := range []struct {
		edit func(*Flags)
		err  string
	}{
		{func(f *Flags) { f.Top = 0 }, "--top must be at least 1, got 0"},
		{func(f *Flags) { f.MinBytes = "lots" }, `--min-bytes "lots": `},
		{func(f *Flags) { f.Sort = "size" }, "--sort: "},
		{func(f *Flags) { f.Steps = "epochs" }, "--steps: "},
		{func(f *Flags) { f.Focus = "(" }, "--focus: "},
		{func(f *Flags) { f.Ignore = "[" }, "--ignore: "},
		{func(f *Flags) { f.By, f.ByAnnotation = "region", true }, "--by region and --by-annotation group differently: give one"},
		{func(f *Flags) { f.By = "file" }, `--by "file": want stack, annotation or region`},
	} {
		f := def
		tc.edit(&f)
		if _, err := f.Options(); err == nil || len(err.Error()) < len(tc.err) || err.Error()[:len(tc.err)] != tc.err {
			t.Errorf("%+v: err = %v, want %s…", f, err, tc.err)
		}
	}
}
