package units

import (
	"strconv"
	"strings"
)

// Int formats an integer with thousands separators: 2000000 is
// "2,000,000".
func Int[T ~int | ~int32 | ~int64](n T) string {
	s := strconv.FormatInt(int64(n), 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	b := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		b = append(b, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// Plural is n and noun, in the plural when n is not 1, with thousands
// separators: "1 segment", "2 segments", "3 entries", "2 keys",
// "1,234 trace entries". A noun ending in a consonant and y takes "ies".
// For a noun whose plural is irregular, use [Count].
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if stem, ok := strings.CutSuffix(noun, "y"); ok && !strings.HasSuffix(stem, "a") && !strings.HasSuffix(stem, "e") &&
		!strings.HasSuffix(stem, "o") {
		noun = stem + "ie"
	}
	return Int(int64(n)) + " " + noun + "s"
}

// Count is n with one when n is 1, many otherwise: Count(2, "new stack
// holds", "new stacks hold") is "2 new stacks hold".
func Count(n int, one, many string) string {
	return Int(int64(n)) + " " + Verb(n, one, many)
}

// Verb returns singular when n is 1, plural otherwise ("has"/"have").
func Verb(n int, singular, plural string) string {
	if n == 1 {
		return singular
	}
	return plural
}

// OfAll is k of n nouns: "the only entry", "all 3 entries", "2 of 3
// entries" (a verb after it agrees with k).
func OfAll(k, n int, noun string) string {
	switch {
	case k == n && n == 1:
		return "the only " + noun
	case k == n:
		return "all " + Plural(n, noun)
	}
	return Int(int64(k)) + " of " + Plural(n, noun)
}
