package verdictview

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/snapview/snapview/analyze/check"
	"github.com/snapview/snapview/analyze/stats"
	"github.com/snapview/snapview/internal/units"
	"github.com/snapview/snapview/report/kit"
)

// CheckView is what `snapview check` prints: the results of its rules on
// one run, against a baseline when Baseline is set.
type CheckView struct {
	File, Baseline string
	// Strict: an unknown result fails the run (and its JUnit testcase).
	Strict  bool
	Results []check.Result
}

// checkValue formats a figure with its trust mark (kit.FigureValueMax):
// bytes as units.Bytes, counts as integers; "+" after a lower bound, "LO
// to HI" where the file bounds it from above too (hi, num_alloc_retries),
// "?" when unknown.
func checkValue(key string, v, hi int64, e stats.Exactness) string {
	return kit.FigureValueMax(v, hi, !check.IsCount(key), e)
}

// checkName is how a line names its rule: "allocated_peak
// (allocated_bytes.all.peak)" for an alias, the key alone otherwise.
func checkName(r check.Rule) string {
	switch {
	case r.Kind == check.NoLeak:
		return "no leak"
	case r.Name == r.Key || r.Name == "":
		return r.Key
	}
	return r.Name + " (" + r.Key + ")"
}

// checkLimit says what the figure was held to.
func checkLimit(r check.Result) string {
	rule := r.Rule
	switch rule.Kind {
	case check.NoLeak:
		return "no stack judged a leak"
	case check.NoOOM, check.NoRetries:
		return "<= 0"
	case check.Max:
		if !rule.IsPercent {
			return "<= " + checkValue(rule.Key, rule.Limit, 0, stats.Exact)
		}
		return fmt.Sprintf("<= %s%% of baseline %s", trimFloat(rule.Percent), checkValue(rule.Key, r.Base, r.BaseMax, r.BaseExactness)) + boundText(r)
	}
	return fmt.Sprintf("<= baseline %s + %s%%", checkValue(rule.Key, r.Base, r.BaseMax, r.BaseExactness), trimFloat(rule.Percent)) + boundText(r)
}

// boundText is " = BOUND" for a relative limit the baseline fixes.
func boundText(r check.Result) string {
	if r.BaseExactness != stats.Exact {
		return ""
	}
	return " = " + checkValue(r.Rule.Key, r.Bound, 0, stats.Exact)
}

// trimFloat formats a percentage without trailing zeros.
func trimFloat(f float64) string {
	s := fmt.Sprintf("%.3f", f)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// WriteCheckAs writes v as JSON (WriteCheckJSON) when json is set, as
// text (WriteCheckText) otherwise.
func WriteCheckAs(w io.Writer, v *CheckView, json bool) error {
	if json {
		return WriteCheckJSON(w, v)
	}
	return WriteCheckText(w, v)
}

// CheckFailure is the error message of a check run that failed
// (check.Failed; with v.Strict an unknown result fails too): "FILE: 2 of
// 5 checks failed"; "" when it did not fail.
func CheckFailure(v *CheckView) string {
	if !check.Failed(v.Results, v.Strict) {
		return ""
	}
	_, fail, unknown := CheckCounts(v)
	if v.Strict {
		fail += unknown
	}
	return fmt.Sprintf("%s: %d of %s failed", v.File, fail, units.Plural(len(v.Results), "check"))
}

// CheckCounts counts passes, failures and unknown results.
func CheckCounts(v *CheckView) (pass, fail, unknown int) {
	for _, r := range v.Results {
		switch r.Verdict {
		case check.Pass:
			pass++
		case check.Fail:
			fail++
		default:
			unknown++
		}
	}
	return
}

// WriteCheckText writes one line per result, then the reasons and causes
// indented under it, then the counts.
func WriteCheckText(w io.Writer, v *CheckView) error {
	ew := &kit.ErrWriter{W: w}
	head := "check " + v.File
	if v.Baseline != "" {
		head += " against baseline " + v.Baseline
	}
	ew.Printf("%s\n", kit.Escape(head))
	for _, r := range v.Results {
		verdict := strings.ToUpper(r.Verdict.String())
		value := checkValue(r.Rule.Key, r.Value, r.Max, r.Exactness)
		if r.Rule.Kind == check.NoLeak {
			value = units.Plural(int(r.Value), "leaking stack")
			if r.Exactness == stats.Unknown {
				value = "?"
			}
		}
		line := fmt.Sprintf("%-7s device %d  %s = %s  %s", verdict, r.Device, checkName(r.Rule), value, checkLimit(r))
		if r.Allocator {
			line += "  [allocator]"
		}
		ew.Printf("%s\n", kit.Escape(line))
		for _, note := range []string{r.Why, causeText(r)} {
			if note != "" {
				ew.Printf("          %s\n", kit.Escape(note))
			}
		}
	}
	pass, fail, unknown := CheckCounts(v)
	tail := fmt.Sprintf("%d passed, %d failed, %d unknown", pass, fail, unknown)
	if unknown > 0 {
		if v.Strict {
			tail += " (--strict: unknown fails)"
		} else {
			tail += " (unknown does not fail without --strict)"
		}
	}
	if fail > 0 || (v.Strict && unknown > 0) {
		tail += ": FAIL"
	} else {
		tail += ": OK"
	}
	ew.Printf("%s\n", tail)
	return ew.Err
}

type checkJSON struct {
	File     string            `json:"file"`
	Baseline *string           `json:"baseline"`
	Strict   bool              `json:"strict"`
	OK       bool              `json:"ok"`
	Passed   int               `json:"passed"`
	Failed   int               `json:"failed"`
	Unknown  int               `json:"unknown"`
	Checks   []checkResultJSON `json:"checks"`
}

type checkResultJSON struct {
	Device    int    `json:"device"`
	Check     string `json:"check"`
	Name      string `json:"name"`
	Key       string `json:"key,omitempty"`
	Verdict   string `json:"verdict"`
	Value     *int64 `json:"value"`
	Exactness string `json:"exactness"`
	// AtMost and BaseAtMost are summary's "at_most": the most a lower
	// bound can be where the file bounds it from both sides.
	AtMost         *int64   `json:"at_most,omitempty"`
	Limit          *int64   `json:"limit"`
	Percent        *float64 `json:"percent,omitempty"`
	Baseline       *int64   `json:"baseline,omitempty"`
	BaseExactness  string   `json:"baseline_exactness,omitempty"`
	BaseAtMost     *int64   `json:"baseline_at_most,omitempty"`
	Allocator      bool     `json:"depends_on_allocator"`
	Why            string   `json:"why,omitempty"`
	Cause          string   `json:"cause,omitempty"`
	AllocatedDelta *int64   `json:"allocated_peak_delta_bytes,omitempty"`
}

// causeText says where a difference from the baseline comes from.
func causeText(r check.Result) string {
	switch r.Cause {
	case check.CauseAllocator:
		return "same requests on both runs: the difference is the allocator's (placement, caching, settings), not the program's"
	case check.CauseAllocatorLikely:
		return "allocated_bytes.all.peak is the same on both runs: the difference is likely the allocator's, not the requests'"
	case check.CauseRequests:
		if r.AllocatedDelta == 0 {
			return "the requests differ (another sequence of allocations), though allocated_bytes.all.peak is the same"
		}
		return fmt.Sprintf("the requests changed: allocated_bytes.all.peak moved by %s", units.SignedBytes(r.AllocatedDelta))
	case check.CauseRounding:
		return "same requests on both runs: the blocks were rounded differently (a setting such as roundup_power2_divisions)"
	}
	return ""
}

// causeJSON names a Cause in JSON.
func causeJSON(c check.Cause) string {
	return [...]string{"", "allocator", "allocator_likely", "requests", "rounding"}[c]
}

// checkKindJSON names a rule's kind in JSON.
func checkKindJSON(k check.Kind) string {
	return [...]string{"max", "max_growth", "no_oom", "no_retries", "no_leak"}[k]
}

// WriteCheckJSON writes v as JSON: every result with its figures
// (bytes or counts), exactness and
func WriteCheckJSON(w io.Writer, v *CheckView) error {
	out := checkJSON{File: v.File, Strict: v.Strict, Checks: []checkResultJSON{}}
	if v.Baseline != "" {
		out.Baseline = &v.Baseline
	}
	out.Passed, out.Failed, out.Unknown = CheckCounts(v)
	out.OK = out.Failed == 0 && !(v.Strict && out.Unknown > 0)
	for _, r := range v.Results {
		j := checkResultJSON{Device: r.Device, Check: checkKindJSON(r.Rule.Kind), Name: r.Rule.Name, Key: r.Rule.Key,
			Verdict: r.Verdict.String(), Exactness: r.Exactness.String(), Allocator: r.Allocator, Why: r.Why, Cause: causeJSON(r.Cause)}
		if r.Cause == check.CauseRequests && r.AllocatedDelta != 0 {
			d := r.AllocatedDelta
			j.AllocatedDelta = &d
		}
		if r.Exactness != stats.Unknown {
			val := r.Value
			j.Value = &val
		}
		switch {
		case r.Rule.Kind == check.Max && !r.Rule.IsPercent:
			lim := r.Rule.Limit
			j.Limit = &lim
		case r.Rule.Kind == check.NoOOM || r.Rule.Kind == check.NoRetries:
			var zero int64
			j.Limit = &zero
		case r.HasBase:
			p := r.Rule.Percent
			j.Percent = &p
			if r.BaseExactness == stats.Exact {
				b := r.Bound
				j.Limit = &b
			}
		}
		if r.HasBase {
			b := r.Base
			j.Baseline, j.BaseExactness = &b, r.BaseExactness.String()
			if r.BaseMax > 0 {
				hi := r.BaseMax
				j.BaseAtMost = &hi
			}
		}
		if r.Max > 0 {
			hi := r.Max
			j.AtMost = &hi
		}
		out.Checks = append(out.Checks, j)
	}
	return kit.WriteJSON(w, out)
}

// JUnit's XML as Jenkins, GitLab and GitHub's test reporters read it.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteCheckJUnit writes v as a JUnit XML report: one testsuite for the
// file, one testcase per result; a failed result is a failure, an unknown
// one skipped (a failure with Strict).
func WriteCheckJUnit(w io.Writer, v *CheckView) error {
	suite := junitSuite{Name: "snapview check " + v.File}
	for _, r := range v.Results {
		c := junitCase{
			Name:      fmt.Sprintf("device %d: %s %s", r.Device, checkName(r.Rule), checkLimit(r)),
			ClassName: "snapview.check",
			SystemOut: fmt.Sprintf("%s = %s", checkName(r.Rule), checkValue(r.Rule.Key, r.Value, r.Max, r.Exactness)),
		}
		msg := strings.Join(nonEmpty(c.SystemOut, r.Why, causeText(r)), "; ")
		switch {
		case r.Verdict == check.Fail || (r.Verdict == check.Unknown && v.Strict):
			c.Failure = &junitMessage{Message: msg, Text: msg}
			suite.Failures++
		case r.Verdict == check.Unknown:
			c.Skipped = &junitMessage{Message: msg}
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, c)
	}
	suite.Tests = len(suite.Cases)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// nonEmpty returns the strings that are not empty.
func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
