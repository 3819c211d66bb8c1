package check

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/snapview/snapview/internal/units"
)

// ParseMax reads a --max rule, NAME=LIMIT: NAME a figure (ResolveName),
// LIMIT a size in bytes (units.ParseBytes: 12GiB), a whole number for a
// count, or a percentage of the baseline (110%). The errors start with
// "--max s: " and say what is wanted.
func ParseMax(s string) (Rule, error) {
	name, lim, err := splitRule("--max", s)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Kind: Max, Name: name}
	if r.Key, err = ResolveName(name); err != nil {
		return Rule{}, fmt.Errorf("--max %s: %v", s, err)
	}
	switch {
	case strings.HasSuffix(lim, "%"):
		if r.Percent, err = parsePercent(lim); err != nil {
			return Rule{}, fmt.Errorf("--max %s: %v", s, err)
		}
		r.IsPercent = true
	case IsCount(r.Key):
		n, err := strconv.ParseInt(lim, 10, 64)
		if err != nil || n < 0 {
			return Rule{}, fmt.Errorf("--max %s: %s counts, so want a whole number or a percentage of the baseline (110%%), got %q", s, r.Key, lim)
		}
		r.Limit = n
	default:
		if r.Limit, err = units.ParseBytes(lim); err != nil {
			return Rule{}, fmt.Errorf("--max %s: %v, or a percentage of the baseline (110%%)", s, err)
		}
	}
	return r, nil
}

// ParseMaxGrowth reads a --max-growth rule, NAME=PERCENT (5, 5% or 2.5%:
// how much the figure may grow over the baseline's). The errors start
// with "--max-growth s: " and say what is wanted.
func ParseMaxGrowth(s string) (Rule, error) {
	name, pct, err := splitRule("--max-growth", s)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{Kind: MaxGrowth, Name: name}
	if r.Key, err = ResolveName(name); err != nil {
		return Rule{}, fmt.Errorf("--max-growth %s: %v", s, err)
	}
	if r.Percent, err = parsePercent(pct); err != nil {
		return Rule{}, fmt.Errorf("--max-growth %s: %v", s, err)
	}
	return r, nil
}

// splitRule splits NAME=VALUE, the form of the flag's rules.
func splitRule(flag, s string) (string, string, error) {
	name, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(v) == "" {
		return "", "", fmt.Errorf("%s %q: want NAME=VALUE, e.g. %s allocated_peak=12GiB", flag, s, flag)
	}
	return strings.TrimSpace(name), strings.TrimSpace(v), nil
}

// parsePercent reads "5", "5%" or "2.5%": a finite percentage, 0 or more.
func parsePercent(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || v != v || v > 1e9 {
		return 0, fmt.Errorf("want a percentage such as 5 or 110%%, got %q", s)
	}
	return v, nil
}

// Flags are the rules of `snapview check` as its flags give them.
type Flags struct {
	// Max and Growth are the --max and --max-growth values (ParseMax,
	// ParseMaxGrowth).
	Max, Growth              []string
	NoOOM, NoRetries, NoLeak bool
	// Baseline says --baseline is given: a limit relative to the
	// baseline needs one.
	Baseline bool
}

// Rules turns f into rules, in the order --max, --max-growth, --no-oom,
// --no-retries, --no-leak. The errors, each the command's usage error,
// are a malformed rule's (naming its flag), no rule at all, or a limit
// relative to the baseline without one.
func Rules(f Flags) ([]Rule, error) {
	var rules []Rule
	for _, m := range f.Max {
		r, err := ParseMax(m)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	for _, g := range f.Growth {
		r, err := ParseMaxGrowth(g)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	if f.NoOOM {
		rules = append(rules, Rule{Kind: NoOOM})
	}
	if f.NoRetries {
		rules = append(rules, Rule{Kind: NoRetries})
	}
	if f.NoLeak {
		rules = append(rules, Rule{Kind: NoLeak, Name: "leaks"})
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("no check given: say --max, --max-growth, --no-oom, --no-retries or --no-leak")
	}
	for _, r := range rules {
		if (r.Kind == MaxGrowth || r.IsPercent) && !f.Baseline {
			return nil, fmt.Errorf("%s: a limit relative to the baseline needs --baseline BASE", r.Name)
		}
	}
	return rules, nil
}
