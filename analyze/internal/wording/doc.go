// Package wording writes counts in the analysis packages' messages:
// "3 entries", "all 2 frees", "5,884". It holds the exact wording the
// views print today (byte-equal outputs); internal/units is meant to
// replace it.
package wording
