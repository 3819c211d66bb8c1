package report

// sparkRamp draws a group's live bytes from none to its highest.
const sparkRamp = "_.:-=+*#%@"

// sparkWidth is the most characters of a growth sparkline.
const sparkWidth = 20

// rampChars draws each value as a character of sparkRamp: lo (or less)
// as its first, hi as its last, the rest rounded up so that any value
// above lo shows.
func rampChars(vals []int64, lo, hi int64) string {
	b := make([]byte, len(vals))
	for i, v := range vals {
		level := 0
		if v > lo && hi > lo {
			level = int(min((v-lo)*int64(len(sparkRamp)-1)+hi-lo-1, (hi-lo)*int64(len(sparkRamp)-1)) / (hi - lo))
		}
		b[i] = sparkRamp[level]
	}
	return string(b)
}
