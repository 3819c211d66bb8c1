#!/usr/bin/env python3
"""Make testdata/snapshots/host_pinned.pickle (no PyTorch needed).

Run from the repository root:  python3 testdata/gen/hostgen.py

A PyTorch 2.14-style snapshot with pinned host memory, as
torch.cuda.memory._record_memory_history(record_pinned_host_memory=True)
writes it (pytorch/pytorch#182407, first merged with the argument named
record_host): the device's segments and device_traces as usual, plus
`host_segments` and `host_traces`. torch 2.11 (the device machine's)
cannot record host memory, so the file is made here from a model of the
caching host allocator, CachingHostAllocatorImpl in
aten/src/ATen/core/CachingHostAllocator.h, as read in pytorch/pytorch at
85be33f2788dcfd44b2c45d8b1641a23b488b4c4:

  allocate(size)  pool = the current capture's private pool, else the
                  default one; process_events(pool); round size up to a
                  power of two (PowerOf2Ceil; the default thresholds
                  pinned_max_round_threshold / pinned_max_cached_size never
                  stop it here); take the back of that size's free list of
                  the pool (get_free_block) -> alloc, else pin a new block
                  (allocate_host_memory) -> segment_alloc, then alloc
  record_event    adds the stream to the block's streams_
  free(block)     free_requested; no streams: maybe_cache_block at once
                  (free_completed, pushed at the back of its pool's free
                  list); with streams: one event per stream, the block is
                  cached when they complete
  process_events  pops events oldest first; stops at the first not ready;
                  a block whose events all completed is cached
                  (free_completed)
  empty_cache     process_events(), then unpins every cached block of the
                  default pool (segment_free)

Layout, from PyTorch's writer (THCPModule_memorySnapshot in
torch/csrc/cuda/Module.cpp): `host_traces` is one flat list; record_trace
writes every entry with the block's size (alloc too: the block, not the
request), stream 0, time_us, compile_context "" and user_metadata "" (the
TraceEntry defaults: the host allocator passes none), pool_id (0, 0)
whatever the pool, and a "frames" key only where a context was gathered
(alloc at context "state" and up, free_requested at "all"; segment_alloc,
free_completed and segment_free never). getSegments lists each block as a
segment of its own: device -1, address, total_size = the block size,
allocated_size / active_size, requested_size 0 (SegmentInfo's default),
stream 0, "small", segment_pool_id = the block's owning pool, not
expandable, frames []; one block of requested_size = size whose frames are
its allocation context while it is handed out (reset at free). The default
pool's blocks come first, then each private pool's.

The run (S1 = a copy stream the first buffer is used on):
   1 a = allocate(1,000,000)  -> 1 MiB, new block A
   2 b = allocate(3,000,000)  -> 4 MiB, new block B
   3 record_event(a, S1); free(a)        A waits for S1's event
   4 c = allocate(600,000)    -> 1 MiB: A's event not done, new block C
   5 free(b)                             B cached
   6 S1 completes; d = allocate(2,500,000) -> 4 MiB: A cached (event done),
                                         then B reused
   7 free(c)                             C cached (list of 1 MiB: A, C)
   8 e = allocate(700,000)    -> 1 MiB: C, the block cached last
   9 empty_cache()                       A unpinned
  10 f = allocate(100)        -> 128 B, new block F; free(f): F cached
  11 free(e)                             C cached
  12 a CUDA graph capture into private pool (1, 0):
     g = allocate(1,000,000)  -> 1 MiB: the private pool caches nothing,
                                         new block G (C is the default
                                         pool's); free(g): G cached in (1, 0)
  13 h = allocate(900,000)    -> 1 MiB: C, the default pool's block cached
                                         last (G, cached later, is (1, 0)'s)
End: B (d) and C (h) handed out, F and G cached. The expected figures in
testdata/snapshots/host_pinned.meta.json are derived by hand from these
rules (testdata/snapshots/README.md shows the derivation); this script
asserts that its own model agrees with them.
"""
import json
import pickle

SNAP = "testdata/snapshots/"
HOSTBASE = 0x7E1000000000
DEVBASE = 0x7F2000000000
S1 = 0x5555A0C0


def frames(line, name, file="/x/loader.py"):
    return [{"filename": file, "line": line, "name": name},
            {"filename": "/x/train.py", "line": 70, "name": "<module>"}]


t = [5000]
DEFAULT, PRIVATE = (0, 0), (1, 0)


def entry(action, addr, size, fr, stream=0):
    """A device trace entry (the CUDA allocator's writer)."""
    t[0] += 10
    return {"action": action, "addr": addr, "size": size, "stream": stream,
            "time_us": t[0], "frames": fr, "compile_context": "N/A",
            "user_metadata": ""}


def host_entry(action, addr, size, fr=None):
    """A host trace entry as THCPModule_memorySnapshot writes it."""
    t[0] += 10
    e = {"action": action, "addr": addr, "size": size, "stream": 0,
         "time_us": t[0], "compile_context": "", "user_metadata": "",
         "pool_id": (0, 0)}
    if fr is not None:
        e["frames"] = fr
    return e


def pow2ceil(n):
    return 1 << (n - 1).bit_length()


class HostAllocator:
    """CachingHostAllocatorImpl, as aten/src/ATen/core/CachingHostAllocator.h."""

    def __init__(self):
        self.next = HOSTBASE
        self.blocks = {}      # addr -> dict(size, allocated, streams, events, stack, pool)
        self.free_list = {}   # (pool, size index) -> list (back = end)
        self.events = []      # front = index 0; (ready flag holder, addr)
        self.trace = []
        self.capture = None   # the private pool a capture allocates to

    def cache(self, addr):
        """maybe_cache_block: free_completed, then the back of its list."""
        b = self.blocks[addr]
        key = (b["pool"], b["size"].bit_length() - 1)
        self.free_list.setdefault(key, []).append(addr)
        self.trace.append(host_entry("free_completed", addr, b["size"]))

    def process_events(self):
        while self.events:
            ev, addr = self.events.pop()           # events_.back()
            if not ev["ready"]:
                self.events.append((ev, addr))     # push_back, return
                return
            b = self.blocks[addr]
            b["events"] -= 1
            if b["events"] == 0:
                self.cache(addr)

    def allocate(self, size, fr):
        pool = self.capture or DEFAULT
        self.process_events()
        rs = pow2ceil(size)
        lst = self.free_list.get((pool, rs.bit_length() - 1), [])
        if lst:
            addr = lst.pop()
        else:
            addr = self.next
            self.next += max(rs, 4096)
            self.trace.append(host_entry("segment_alloc", addr, rs))
            self.blocks[addr] = {"size": rs, "streams": set(), "events": 0, "pool": pool}
        b = self.blocks[addr]
        b["allocated"], b["stack"] = True, fr
        self.trace.append(host_entry("alloc", addr, rs, fr))
        return addr

    def record_event(self, addr, stream):
        self.blocks[addr]["streams"].add(stream)

    def free(self, addr, fr):
        b = self.blocks[addr]
        b["allocated"], b["stack"] = False, []
        self.trace.append(host_entry("free_requested", addr, b["size"], fr))
        if not b["streams"]:
            self.cache(addr)
            return None
        evs = []
        for s in sorted(b["streams"]):
            ev = {"ready": False, "stream": s}
            self.events.insert(0, (ev, addr))      # emplace_front
            evs.append(ev)
        b["events"] += len(evs)
        b["streams"] = set()
        return evs

    def empty_cache(self):
        self.process_events()
        for key in sorted(self.free_list):
            if key[0] != DEFAULT:
                continue                           # a pool not yet released
            for addr in self.free_list[key]:
                b = self.blocks.pop(addr)
                self.trace.append(host_entry("segment_free", addr, b["size"]))
            self.free_list[key] = []

    def state(self, addr):
        b = self.blocks[addr]
        if b["allocated"]:
            return "active_allocated"
        if b["events"]:
            return "active_pending_free"
        return "inactive"

    def segments(self):
        out = []
        order = sorted(self.blocks, key=lambda a: (self.blocks[a]["pool"] != DEFAULT, self.blocks[a]["pool"], a))
        for addr in order:
            b = self.blocks[addr]
            st = self.state(addr)
            out.append({"device": -1, "address": addr, "total_size": b["size"],
                        "allocated_size": b["size"] if st == "active_allocated" else 0,
                        "active_size": b["size"] if st != "inactive" else 0,
                        "requested_size": 0,
                        "stream": 0, "segment_type": "small", "segment_pool_id": b["pool"],
                        "is_expandable": False, "frames": [],
                        "blocks": [{"address": addr, "size": b["size"], "requested_size": b["size"],
                                    "state": st, "frames": b["stack"]}]})
        return out


FPIN = frames(41, "pin_batch")
FCOLL = frames(58, "collate", "/x/collate.py")
FFREE = frames(77, "release")

h = HostAllocator()
a = h.allocate(1_000_000, FPIN)
b = h.allocate(3_000_000, FPIN)
h.record_event(a, S1)
evs = h.free(a, FFREE)
c = h.allocate(600_000, FCOLL)
h.free(b, FFREE)
for ev in evs:
    ev["ready"] = True
d = h.allocate(2_500_000, FPIN)
h.free(c, FFREE)
e = h.allocate(700_000, FCOLL)
h.empty_cache()
f = h.allocate(100, FCOLL)
h.free(f, FFREE)
h.free(e, FFREE)
h.capture = PRIVATE
g = h.allocate(1_000_000, FCOLL)
h.capture = None
h.free(g, FFREE)
i = h.allocate(900_000, FCOLL)

# The device: one small-pool segment, one live 4000 B tensor.
dev_frames = frames(12, "to_device", "/x/train.py")
t[0] = 4000
device_trace = [entry("segment_alloc", DEVBASE, 2097152, dev_frames),
                entry("alloc", DEVBASE, 4000, dev_frames)]
snap = {
    "segments": [{"device": 0, "address": DEVBASE, "total_size": 2097152,
                  "allocated_size": 4096, "active_size": 4096, "requested_size": 4000,
                  "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
                  "is_expandable": False, "frames": dev_frames,
                  "blocks": [{"address": DEVBASE, "size": 4096, "requested_size": 4000,
                              "state": "active_allocated", "frames": dev_frames},
                             {"address": DEVBASE + 4096, "size": 2097152 - 4096,
                              "requested_size": 0, "state": "inactive", "frames": []}]}],
    "device_traces": [device_trace],
    "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                           "garbage_collection_threshold": 0.0, "expandable_segments": False,
                           "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                           "pinned_use_cuda_host_register": False,
                           "roundup_power2_divisions": {"1": 0}},
    "external_annotations": [],
    "host_segments": h.segments(),
    "host_traces": h.trace,
}

# The figures derived by hand (testdata/snapshots/README.md), checked here
# against the model's own trace.
MiB = 1 << 20
with open(SNAP + "host_pinned.meta.json") as fh:
    want = json.load(fh)["host"]
cur = peak = act = peak_act = reqs = peak_reqs = nsegs = peak_segs = 0
nalloc = nfree = 0
for en in h.trace:
    if en["action"] == "segment_alloc":
        cur += en["size"]; nsegs += 1; nalloc += 1
    elif en["action"] == "segment_free":
        cur -= en["size"]; nsegs -= 1; nfree += 1
    elif en["action"] == "alloc":
        act += en["size"]; reqs += 1
    elif en["action"] == "free_completed":
        act -= en["size"]; reqs -= 1
    peak, peak_act = max(peak, cur), max(peak_act, act)
    peak_reqs, peak_segs = max(peak_reqs, reqs), max(peak_segs, nsegs)
got = {"trace_entries": len(h.trace), "segments": nsegs, "peak_segments": peak_segs,
       "reserved_bytes": cur, "peak_reserved_bytes": peak,
       "active_bytes": act, "peak_active_bytes": peak_act,
       "active_requests": reqs, "peak_active_requests": peak_reqs,
       "num_host_alloc": nalloc, "num_host_free": nfree}
for k, v in got.items():
    assert want[k] == v, (k, want[k], v)
with open(SNAP + "host_pinned.pickle", "wb") as fh:
    pickle.dump(snap, fh, protocol=4)
print("wrote", SNAP + "host_pinned.pickle", len(h.trace), "host entries")
