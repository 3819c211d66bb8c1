#!/usr/bin/env python3
"""Make testdata/snapshots/annotate.pickle (no PyTorch needed).

Run from the repository root:  python3 testdata/gen/annotate.py

A PyTorch 2.14-style snapshot with `annotate` trace entries
(torch.cuda.memory._annotate_tensor / _annotate_memory, pytorch/pytorch#190575).
torch/cuda/memory.py documents the entry: action "annotate", addr = the live
allocation's base address, user_metadata = the annotation string, frames =
the annotation site; annotations accumulate and change no allocator state.

One 2 MiB small-pool segment; three allocations (4000 B -> 4096, 8000 B ->
8192, 1000 B -> 1024); three annotate entries (two on the first allocation,
one on the second); the third allocation freed. The file also holds keys and
an action newer than snapview knows (pool_id, a "future_key" and a
"future_action" entry), which must be tolerated.
"""
import pickle

SNAP = "testdata/snapshots/"
BASE = 0x7F0000000000
SEG = 2097152


def frames(line, name):
    return [{"filename": "/x/train.py", "line": line, "name": name},
            {"filename": "/x/train.py", "line": 90, "name": "<module>"}]


FA, FB, FC = frames(12, "forward"), frames(20, "init_cache"), frames(31, "scratch")
FN = frames(50, "pack_hook")

t = [1000]


def entry(action, addr, size, fr, meta=""):
    t[0] += 1
    return {"action": action, "addr": addr, "size": size, "stream": 0,
            "time_us": t[0], "frames": fr, "compile_context": "N/A",
            "user_metadata": meta, "pool_id": (0, 0)}


trace = [
    entry("segment_alloc", BASE, SEG, FA),
    entry("alloc", BASE, 4000, FA),
    entry("alloc", BASE + 0x1000, 8000, FB),
    entry("alloc", BASE + 0x3000, 1000, FC),
    entry("annotate", BASE, 4096, FN, "saved for backward"),
    entry("annotate", BASE + 0x1000, 8192, FN, "kv_cache layer 3"),
    entry("annotate", BASE, 4096, FN, "activation checkpoint"),
    entry("free_requested", BASE + 0x3000, 1000, FC),
    entry("free_completed", BASE + 0x3000, 1000, FC),
]
future = entry("future_action", BASE, 4096, [])
future["future_key"] = 1
trace.append(future)

seg = {"device": 0, "address": BASE, "total_size": SEG,
       "allocated_size": 4096 + 8192, "active_size": 4096 + 8192,
       "requested_size": 4000 + 8000, "stream": 0, "segment_type": "small",
       "segment_pool_id": (0, 0), "is_expandable": False, "frames": FA,
       "blocks": [
           {"address": BASE, "size": 4096, "requested_size": 4000,
            "state": "active_allocated", "frames": FA},
           {"address": BASE + 0x1000, "size": 8192, "requested_size": 8000,
            "state": "active_allocated", "frames": FB},
           {"address": BASE + 0x3000, "size": SEG - 0x3000, "requested_size": 0,
            "state": "inactive", "frames": []}]}

d = {"segments": [seg], "device_traces": [trace],
     "allocator_settings": {"max_split_size": -1, "roundup_power2_divisions": {"1": 0},
                            "garbage_collection_threshold": 0, "expandable_segments": False},
     "external_annotations": [], "host_segments": [], "host_traces": []}
with open(SNAP + "annotate.pickle", "wb") as f:
    pickle.dump(d, f, protocol=4)
