package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// parseBytes parses a byte count: a number, optionally followed by a unit:
// B; KiB, MiB, GiB or TiB (powers of 1024); KB, MB, GB or TB (powers of
// 1000). Units are case-insensitive. A bare K, M, G or T is refused: it
// could mean either.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimSpace(strings.TrimRightFunc(t, func(r rune) bool { return r >= 'A' && r <= 'z' }))
	unit := strings.TrimSpace(t[len(num):])
	mult := map[string]float64{
		"": 1, "b": 1,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	}[strings.ToLower(unit)]
	v, err := strconv.ParseFloat(num, 64)
	switch {
	case err == nil && mult == 0 && len(unit) == 1 && strings.ContainsAny(unit, "kKmMgGtT"):
		u := strings.ToUpper(unit)
		return 0, fmt.Errorf("%s is ambiguous: say %s%sB (powers of 1000) or %s%siB (powers of 1024)", unit, num, u, num, u)
	case err != nil || mult == 0 || v < 0 || v*mult >= math.MaxInt64:
		return 0, fmt.Errorf("want a byte count such as 4096, 512KiB, 10MiB or 1GiB (or 10MB, 1GB: powers of 1000)")
	}
	return int64(v * mult), nil
}
