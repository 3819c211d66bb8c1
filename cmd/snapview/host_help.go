package main

// hostHelp says what summary, state and leaks print about pinned host
// memory; their help ends with it.
const hostHelp = `Pinned host memory (PyTorch 2.14's host_segments and host_traces, recorded
with _record_memory_history(record_pinned_host_memory=True)) gets its own
section after the device's: the host segments, the trace replayed under
the caching host allocator's rules (peak pinned and handed out, marked
exact, "at least" or unknown as the device's figures are, num_host_alloc
and num_host_free), and the pinned memory handed out at the end by stack.
A file of host memory only (record_cuda=False) shows that section alone;
state and leaks leave it out when the host keys hold nothing.
--json gives it under "host" with summary --json's figures:
{"segments","reserved_bytes","allocated_bytes","allocations","cached_bytes",
"trace_entries","first_time_us","last_time_us","actions","peak_requested_bytes",
"replay":{"exactness","why","allocations","allocated_bytes","active_requests",
"active_bytes" (each {"current","peak","allocated","freed"}, history left out
when unknown),"num_host_alloc","num_host_free",...},
"live_by_stack":[{"where","bytes","blocks"}]}, whenever the file has the host
keys (empty or not); the key is left out when it has neither.`
