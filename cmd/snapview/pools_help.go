package main

// poolsHelp says what summary, segments and state print about private
// pools; the three commands' help ends with it.
const poolsHelp = `Private pools (a CUDA graph's, a torch.cuda.MemPool's: segment_pool_id
not (0, 0)) get one line each, the figures explain's pool findings give:
the pool's reserved high-water over the trace, its active bytes (live
blocks) at the device's allocated peak and at the end, its segments and
reserved bytes at the dump, its alloc entries and the first of them, and
"abandoned" when it holds segments and no active block (none live, none
pending free). The high-water and the allocations are lower bounds ("at
least") when the trace starts after the pool was created, or when a
segment was freed in the trace (trace entries carry no pool id, so it may
have been the pool's); without a trace only the figures at the dump are
known. --json gives them per device under "private_pools":
[{"pool_id","figures":{"reserved_high_water_bytes","active_at_peak_bytes",
"active_at_end_bytes","pending_free_at_end_bytes","segments_at_end",
"reserved_at_end_bytes","allocations"},"exactness":{NAME: "exact",
"lower_bound" or "unknown" (figure null)},"why","first_alloc_entry",
"abandoned"}], left out for a device without private pools.`
