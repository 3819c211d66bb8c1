package forecast

import (
	"slices"

	"github.com/snapview/snapview/analyze/whatif"
)

// maxSemaphoreBytes bounds the second request of a reduction's pair: its
// semaphores, one int per block of outputs (ReduceConfig::semaphore_size()
// is sizeof(int) * grid().x; 24 to 96 bytes in the recorded series).
const maxSemaphoreBytes = 64 << 10

// reductionBuffers marks the allocs of a request sequence that are the
// staging buffer of a reduction split across thread blocks: ATen's
// gpu_reduce_kernel (aten/src/ATen/native/cuda/Reduce.cuh), when
// setReduceConfig divides the input across blocks (should_global_reduce),
// allocates a buffer of global_memory_size() bytes, then semaphores of
// semaphore_size() bytes, and frees them when it returns, semaphores
// first. In the request sequence that is: alloc X, alloc S (a whole
// number of ints, at most maxSemaphoreBytes), free S, free X, on one
// stream, with no other request or free between them (free_completed
// entries are skipped). Reductions run in the forward too (batch norm
// statistics, the loss's log_softmax), with the stack of the Python line.
//
// The buffer's size is the element size x outputs x ctas_per_output, and
// setReduceConfig sets ctas_per_output = max(min(div_up(target_grid_size,
// grid), div_up(values_per_thread, 16)), div_up(values_per_thread, 256)):
// it grows with the values each output reduces (the batch, the sequence)
// until the device's grid caps it (target_grid_size, from the SM count),
// and below 256 values per thread the reduction is not split at all (no
// buffer). So a buffer the files show at one size may be capped there,
// and smaller, or absent, below them; one the files show growing may stop
// growing above them. [forecaster.synthesize] sizes these buffers beyond
// the files by that rule.
func reductionBuffers(events []whatif.Event, allocs []int32) []bool {
	out := make([]bool, len(allocs))
	// The last four events other than free_completed, by index.
	var last [4]int
	n := 0
	for i := range events {
		if events[i].Kind == whatif.EventFreeCompleted {
			continue
		}
		copy(last[:], last[1:])
		last[3] = i
		n++
		if n < 4 {
			continue
		}
		x, s, fs, fx := &events[last[0]], &events[last[1]], &events[last[2]], &events[last[3]]
		if x.Kind == whatif.EventAlloc && s.Kind == whatif.EventAlloc && s.Size <= maxSemaphoreBytes && s.Size%4 == 0 &&
			fs.Kind == whatif.EventFreeRequested && fs.ID == s.ID &&
			fx.Kind == whatif.EventFreeRequested && fx.ID == x.ID &&
			x.Stream == s.Stream && x.Pool == s.Pool {
			if k, ok := slices.BinarySearch(allocs, int32(last[0])); ok {
				out[k] = true
			}
		}
	}
	return out
}
