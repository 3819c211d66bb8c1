package units

import (
	"strconv"
	"time"
)

// Seconds formats a duration of us microseconds as seconds with prec
// decimals: Seconds(1500000, 3) is "1.500 s".
func Seconds(us int64, prec int) string {
	return strconv.FormatFloat(float64(us)/1e6, 'f', prec, 64) + " s"
}

// Micros formats a duration of us microseconds as seconds to the
// microsecond, exactly: "1.234567 s".
func Micros(us int64) string { return string(AppendMicros(nil, us)) }

// AppendMicros appends [Micros] of us to buf.
func AppendMicros(buf []byte, us int64) []byte {
	if us < 0 {
		buf = append(buf, '-')
		us = -us
	}
	buf = strconv.AppendInt(buf, us/1e6, 10)
	buf = append(buf, '.')
	frac := us % 1e6
	for d := int64(100000); d > 0; d /= 10 {
		buf = append(buf, byte('0'+frac/d%10))
	}
	return append(buf, " s"...)
}

// Span formats a span of us microseconds: to the millisecond from a
// second on ("4.455s"), exactly below ("1.5ms", "12µs").
func Span(us int64) string {
	d := time.Duration(us) * time.Microsecond
	if d >= time.Second {
		d = d.Round(time.Millisecond)
	}
	return d.String()
}
