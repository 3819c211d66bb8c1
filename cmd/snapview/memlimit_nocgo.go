//go:build !(cgo && linux)

package main

// threadStack returns the address space (bytes) each thread the runtime
// starts takes for its stack: without cgo the runtime allocates the
// stacks itself, counted in its own memory; 8 MiB covers a C library's
// default elsewhere.
func threadStack() int64 {
	return 8 << 20
}
