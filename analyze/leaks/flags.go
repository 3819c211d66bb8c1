package leaks

import (
	"fmt"
	"regexp"

	"github.com/snapview/snapview/analyze/steps"
	"github.com/snapview/snapview/internal/units"
)

// Flags are the options of `snapview leaks` as its flags give them, before
// they are read (Options).
type Flags struct {
	Top                int
	MinBytes           string // a size: "4096", "512KiB" (units.ParseBytes)
	Focus, Ignore      string // regular expressions; "": no filter
	Sort               string // score, bytes or count
	Steps              string // auto, annotation, pattern or slices
	Fold, ByAnnotation bool
	By                 string // stack, annotation or region
}

// Options reads the flags into LeakOptions (At left unset). The error
// names the flag at fault: a --top under 1, a size, sort, step source or
// grouping that does not parse, an expression that does not compile,
// --by region with --by-annotation.
func (f Flags) Options() (LeakOptions, error) {
	var lo LeakOptions
	if f.Top < 1 {
		return lo, fmt.Errorf("--top must be at least 1, got %d", f.Top)
	}
	lo.Top = f.Top
	b, err := units.ParseBytes(f.MinBytes)
	if err != nil {
		return lo, fmt.Errorf("--min-bytes %q: %v", f.MinBytes, err)
	}
	lo.MinBytes = b
	if lo.Sort, err = ParseLeakSort(f.Sort); err != nil {
		return lo, fmt.Errorf("--sort: %v", err)
	}
	if lo.Steps, err = steps.ParseStepSource(f.Steps); err != nil {
		return lo, fmt.Errorf("--steps: %v", err)
	}
	for _, re := range []struct {
		flag, expr string
		dst        **regexp.Regexp
	}{{"focus", f.Focus, &lo.Focus}, {"ignore", f.Ignore, &lo.Ignore}} {
		if re.expr == "" {
			continue
		}
		if *re.dst, err = regexp.Compile(re.expr); err != nil {
			return lo, fmt.Errorf("--%s: %v", re.flag, err)
		}
	}
	lo.Fold = f.Fold
	lo.ByAnnotation = f.ByAnnotation
	switch f.By {
	case "stack":
	case "annotation":
		lo.ByAnnotation = true
	case "region":
		if f.ByAnnotation {
			return lo, fmt.Errorf("--by region and --by-annotation group differently: give one")
		}
		lo.ByRegion = true
	default:
		return lo, fmt.Errorf("--by %q: want stack, annotation or region", f.By)
	}
	return lo, nil
}
