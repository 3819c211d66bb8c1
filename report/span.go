package report

import "time"

// formatSpan formats a span of microseconds: to the millisecond from a
// second on ("4.455s"), exactly below ("1.5ms", "12µs").
func formatSpan(us int64) string {
	d := time.Duration(us) * time.Microsecond
	if d >= time.Second {
		d = d.Round(time.Millisecond)
	}
	return d.String()
}
