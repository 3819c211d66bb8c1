package kit

// MomentWords is how a text header names a moment given as the --at flags
// spell it (analyze/steps.ParseMoment): "peak" is "the allocated peak"
// (steps.MomentPeak, the first entry after which allocated bytes are
// highest, which need not be where reserved bytes are), any other moment
// ("oom:2", "entry:85", "step:3") as spelled.
func MomentWords(at string) string {
	if at == "peak" {
		return "the allocated peak"
	}
	return at
}
