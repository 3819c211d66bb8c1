package steps

// AlignFirst is the rule of `--align step`, the one copy that `report`,
// `ranks` and `diff` follow to line several traces up on their steps:
// each trace moves later so that its first step starts where the latest
// first step of them all does. first[i] is when trace i's first step
// starts (in any one unit: the page's microseconds from its origin, or
// time_us) and has[i] whether trace i has steps (annotations or a
// repeating allocation, on a clock). It returns that common start, how
// far to move each trace (shifts[i] = at - first[i], never negative),
// and the index of the first trace without steps (-1 when every trace
// has them; at and shifts are then meaningless): a view of several files
// cannot line up a file without steps, and says so (a usage error).
func AlignFirst(first []int64, has []bool) (at int64, shifts []int64, missing int) {
	for i := range first {
		if !has[i] {
			return 0, nil, i
		}
		if i == 0 || first[i] > at {
			at = first[i]
		}
	}
	shifts = make([]int64, len(first))
	for i := range first {
		shifts[i] = at - first[i]
	}
	return at, shifts, -1
}
