package main

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// setMemoryLimit sets the Go runtime's soft memory limit from the memory
// the process may use, unless GOMEMLIMIT does: 60% of the address-space
// limit (ulimit -v; the runtime reserves address space well beyond its
// heap) or 80% of the cgroup's memory.max, whichever is lower. The
// decoders' budgets (snapshot.Limits, monitor.ReadLog) bound what a file
// may make the process hold; under the limit the collector works harder
// before the process nears the cap, rather than the runtime dying with
// "fatal error: out of memory" on garbage it had not collected. It
// returns the limit set, or 0.
func setMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := int64(math.MaxInt64)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err == nil && rl.Cur != math.MaxUint64 && rl.Cur < 1<<62 {
		limit = min(limit, int64(rl.Cur)/10*6)
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			limit = min(limit, n/10*8)
		}
	}
	if limit == math.MaxInt64 {
		return 0
	}
	debug.SetMemoryLimit(limit)
	return limit
}
