package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes formats a byte count for people: binary units with one decimal
// ("512 B", "1.5 KiB", "20.0 MiB"), choosing the unit so that the rounded
// figure stays below 1024 (1048575 bytes is "1.0 MiB", where _memory_viz
// prints "1024.0KiB"). Negative counts keep their sign ("-3.0 MiB").
func Bytes(n int64) string {
	if n > -1024 && n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v := float64(n) / 1024
	for i, u := range units {
		s := strconv.FormatFloat(v, 'f', 1, 64)
		if i == len(units)-1 || (s != "1024.0" && s != "-1024.0" && v > -1024 && v < 1024) {
			return s + " " + u
		}
		v /= 1024
	}
	panic("unreachable")
}

// SignedBytes formats a change of n bytes: "+4.0 MiB", "-1.0 GiB", "0 B".
func SignedBytes(n int64) string {
	if n > 0 {
		return "+" + Bytes(n)
	}
	return Bytes(n)
}

// byteUnits are the units ParseBytes accepts, lower-cased, with their
// multipliers.
var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// ParseBytes parses a byte count: a number, optionally followed by a unit:
// B; KiB, MiB, GiB or TiB (powers of 1024); KB, MB, GB or TB (powers of
// 1000). Units are case-insensitive and may follow a space ("1.5 GiB").
// A bare K, M, G or T is refused: it could mean either. The error says
// what was wanted; it does not repeat s.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimSpace(strings.TrimRightFunc(t, func(r rune) bool { return r >= 'A' && r <= 'z' }))
	unit := strings.TrimSpace(t[len(num):])
	mult := byteUnits[strings.ToLower(unit)]
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
