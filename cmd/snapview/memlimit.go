package main

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// memoryRoom is what the process's caps leave for the Go heap.
type memoryRoom struct {
	// heap is the bytes the Go heap may map before the process meets a
	// cap, or 0 when nothing caps it.
	heap int64
	// limit is the soft memory limit set (debug.SetMemoryLimit), 0 if
	// none was (no cap, or GOMEMLIMIT set).
	limit int64
}

// decodedCap is the most bytes of decoded objects (snapshot.Limits'
// MaxMemory) a file may make the decoder build within the room, 0 for no
// cap: a quarter of it, as the analyses after the decode hold about three
// times what it built (the 2M-entry benchmark file: 122 MB of decoded
// objects, 343 MB peak resident).
func (r memoryRoom) decodedCap() int64 {
	return r.heap / 4
}

// heapArena is the address space the Go runtime reserves for its heap at
// a time (runtime/malloc.go: heapArenaBytes on 64-bit Linux).
const heapArena = 64 << 20

// setMemoryLimit works out the room the process's caps leave for the Go
// heap and sets the runtime's soft memory limit to 90% of it, unless
// GOMEMLIMIT does. The caps are the address-space limit (ulimit -v) less
// what is mapped now (the runtime reserves about 1.2 GiB of address space
// at start, whatever the input), a stack for each thread the runtime may
// start and one heap arena; and 80% of the cgroup's memory.max. Under
// the limit the collector works harder before the process nears the cap,
// rather than the runtime dying with "fatal error: out of memory" on
// garbage it had not collected; the decoder's budget is capped from the
// same room (decodedCap), so that a file too large for it ends in a
// one-line error.
func setMemoryLimit() memoryRoom {
	heap := int64(math.MaxInt64)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err == nil && rl.Cur != math.MaxUint64 && rl.Cur < 1<<62 {
		threads := int64(runtime.GOMAXPROCS(0)+8) * threadStack()
		heap = int64(rl.Cur) - mappedBytes() - threads - heapArena
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			heap = min(heap, n/10*8)
		}
	}
	if heap == math.MaxInt64 {
		return memoryRoom{}
	}
	// A cap the runtime's start has all but used leaves a floor: the
	// limit makes the collector work, the decoder's cap ends the load.
	heap = max(heap, 16<<20)
	r := memoryRoom{heap: heap}
	if os.Getenv("GOMEMLIMIT") == "" {
		r.limit = heap / 10 * 9
		debug.SetMemoryLimit(r.limit)
	}
	return r
}

// mappedBytes returns the process's mapped address space (VmSize in
// /proc/self/status), or 0 when it cannot be read.
func mappedBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "VmSize:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

type memoryRoomKey struct{}

// withMemoryRoom returns a context that carries the room the process's
// caps leave (setMemoryLimit).
func withMemoryRoom(ctx context.Context, r memoryRoom) context.Context {
	return context.WithValue(ctx, memoryRoomKey{}, r)
}

// memoryRoomOf returns the room ctx carries, or no cap.
func memoryRoomOf(ctx context.Context) memoryRoom {
	r, _ := ctx.Value(memoryRoomKey{}).(memoryRoom)
	return r
}
