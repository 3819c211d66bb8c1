//go:build cgo && linux

package main

// The binary links the C library (package net, which cobra's pflag
// imports, resolves names through it when cgo is on), so the runtime
// starts its threads with pthread_create. glibc gives each such thread a
// stack of RLIMIT_STACK bytes (8 MiB) and, at its first malloc, an arena
// of its own: 64 MiB of address space (128 MiB while it is aligned), up
// to 8 per core. Under an address-space limit (ulimit -v 1500000) the
// first few threads took the room the Go heap needed after the runtime's
// own reservations of about 1.2 GiB, and a run on a 45 KB file died at
// random with "fatal error: out of memory" (5 runs in 40). Go allocates
// nothing with malloc and runs little on a thread's C stack, so when
// RLIMIT_AS is set, snapviewCapThreads keeps one arena and 1 MiB thread
// stacks. It runs when the binary is loaded, before the runtime starts
// its first thread. M_ARENA_MAX and pthread_setattr_default_np are
// glibc's (malloc/malloc.c, nptl); other C libraries have no per-thread
// arenas and keep their own stack size.

/*
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>

#define SNAPVIEW_THREAD_STACK (1 << 20)

__attribute__((constructor)) static void snapviewCapThreads(void) {
#if defined(__GLIBC__)
	struct rlimit rl;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
		return;
	}
	mallopt(M_ARENA_MAX, 1);
	pthread_attr_t a;
	size_t s;
	if (pthread_getattr_default_np(&a) == 0) {
		if (pthread_attr_getstacksize(&a, &s) == 0 && s > SNAPVIEW_THREAD_STACK &&
			pthread_attr_setstacksize(&a, SNAPVIEW_THREAD_STACK) == 0) {
			pthread_setattr_default_np(&a);
		}
		pthread_attr_destroy(&a);
	}
#endif
}

// snapviewThreadStack is the stack size (bytes) of the threads
// pthread_create starts, or 0 if unknown.
static size_t snapviewThreadStack(void) {
	pthread_attr_t a;
	size_t s = 0;
	if (pthread_attr_init(&a) != 0) {
		return 0;
	}
	if (pthread_attr_getstacksize(&a, &s) != 0) {
		s = 0;
	}
	pthread_attr_destroy(&a);
	return s;
}
*/
import "C"

// threadStack returns the address space (bytes) each thread the runtime
// starts takes for its stack.
func threadStack() int64 {
	if s := int64(C.snapviewThreadStack()); s > 0 {
		return s
	}
	return 8 << 20
}
