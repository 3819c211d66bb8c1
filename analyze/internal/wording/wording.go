package wording

import (
	"fmt"
	"strconv"
	"strings"
)

// Plural is n and noun, in the plural when n is not 1 ("entry"
// becomes "entries").
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") && !strings.HasSuffix(noun, "ey") {
		return fmt.Sprintf("%s %sies", GroupDigits(n), strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%s %ss", GroupDigits(n), noun)
}

// OfAll is k of n nouns, agreeing with a verb in the number of k: "the
// only free", "all 3 frees", "1 of 3 frees", "2 of 3 frees".
func OfAll(k, n int, noun string) string {
	switch {
	case k == n && n == 1:
		return "the only " + noun
	case k == n:
		return "all " + Plural(n, noun)
	}
	return fmt.Sprintf("%s of %s", GroupDigits(k), Plural(n, noun))
}

// GroupDigits writes n with thousands separated by commas ("5,884"), as
// every view writes counts (report.FormatInt).
func GroupDigits(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Verb returns singular when n is 1, plural otherwise ("has"/"have").
func Verb(n int, singular, plural string) string {
	if n == 1 {
		return singular
	}
	return plural
}

// CountNoun is "1 oom entry", "2 oom entries".
func CountNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
