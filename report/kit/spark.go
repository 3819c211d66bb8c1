package kit

// SparkRamp draws a group's live bytes from none to its highest.
const SparkRamp = "_.:-=+*#%@"

// SparkWidth is the most characters of a growth sparkline.
const SparkWidth = 20

// RampChars draws each value as a character of sparkRamp: lo (or less)
// as its first, hi as its last, the rest rounded up so that any value
// above lo shows.
func RampChars(vals []int64, lo, hi int64) string {
	b := make([]byte, len(vals))
	for i, v := range vals {
		level := 0
		if v > lo && hi > lo {
			level = int(min((v-lo)*int64(len(SparkRamp)-1)+hi-lo-1, (hi-lo)*int64(len(SparkRamp)-1)) / (hi - lo))
		}
		b[i] = SparkRamp[level]
	}
	return string(b)
}
