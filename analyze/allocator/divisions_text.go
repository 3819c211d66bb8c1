package allocator

import "math/bits"

// DivisionsText renders a snapshot's roundup_power2_divisions (divisions
// by the start of each power-of-two interval, in MiB, as
// allocator_settings records it) the way PYTORCH_CUDA_ALLOC_CONF writes
// it: one number when every interval has it ("0": off), else the list
// form, "[256:1,512:2,>:8]". Keys that are not powers of two are left
// out, as FromSettings leaves them.
func DivisionsText(m map[int64]int64) string {
	var d [roundupIntervals]int64
	for k, v := range m {
		if k <= 0 || k&(k-1) != 0 {
			continue
		}
		if i := bits.Len64(uint64(k)) - 1; i < roundupIntervals {
			d[i] = v
		}
	}
	if s := divisionsString(d); s != "" {
		return s
	}
	return "0"
}
