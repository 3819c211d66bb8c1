#!/usr/bin/env python3
"""Make the small crafted fixtures in testdata/snapshots/ (no PyTorch needed).

Run from the repository root:  python3 testdata/gen/fixtures.py
Each fixture is the bundled real snapshot mlp_train.pickle (PyTorch 2.11, H200)
re-encoded, or a tiny hand-written snapshot dict. See testdata/snapshots/README.md.
"""
import gzip
import json
import pickle

SNAP = "testdata/snapshots/"

with open(SNAP + "mlp_train.pickle", "rb") as f:
    real = pickle.load(f)

# Protocol 2 (no FRAME, BINPUT/BINGET, like the C++ pickler) and protocol 5
# (Python 3.14's default), and the same data gzip-compressed.
for proto in (2, 5):
    with open(SNAP + f"mlp_train.proto{proto}.pickle", "wb") as f:
        pickle.dump(real, f, protocol=proto)
with open(SNAP + "mlp_train.pickle.gz", "wb") as raw:
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as f:
        pickle.dump(real, f, protocol=4)

FRAMES = [{"filename": "/x/train.py", "line": 12, "name": "step"},
          {"filename": "/x/train.py", "line": 40, "name": "<module>"}]


def tiny(**extra):
    seg = {"device": 0, "address": 0x7F0000000000, "total_size": 2097152,
           "allocated_size": 512, "active_size": 512, "requested_size": 500,
           "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
           "is_expandable": False, "frames": [],
           "blocks": [
               {"address": 0x7F0000000000, "size": 512, "requested_size": 500,
                "state": "active_allocated", "frames": FRAMES},
               {"address": 0x7F0000000200, "size": 2097152 - 512, "requested_size": 0,
                "state": "inactive", "frames": []}]}
    trace = [
        {"action": "segment_alloc", "addr": 0x7F0000000000, "size": 2097152, "stream": 0,
         "time_us": 1000, "frames": FRAMES},
        {"action": "alloc", "addr": 0x7F0000000000, "size": 500, "stream": 0,
         "time_us": 1001, "frames": FRAMES},
    ]
    d = {"segments": [seg], "device_traces": [trace],
         "allocator_settings": {"max_split_size": -1, "roundup_power2_divisions": {"1": 0}},
         "external_annotations": []}
    d.update(extra)
    return d


# A stream of 2**64-1 (a -1 cast to unsigned): Python writes a 9-byte LONG1,
# which made pytorch.org/memory_viz fail (field report 1).
d = tiny()
d["segments"][0]["stream"] = 2**64 - 1
for e in d["device_traces"][0]:
    e["stream"] = 2**64 - 1
with open(SNAP + "long1-9byte-stream.pickle", "wb") as f:
    pickle.dump(d, f, protocol=4)

# Keys, actions and states from newer PyTorch than we know.
d = tiny(host_segments=[], host_traces=[])
d["device_traces"][0].append({"action": "annotate", "addr": 0, "size": 0, "stream": 0,
                              "time_us": 1002, "pool_id": (0, 0), "internal_metadata": "x"})
d["device_traces"][0][1]["pool_id"] = (0, 0)
with open(SNAP + "newer-fields.pickle", "wb") as f:
    pickle.dump(d, f, protocol=4)

# The same dict as JSON, as MemoryViz accepts it.
d = tiny()
with open(SNAP + "tiny.json", "w") as f:
    json.dump(d, f)

# Pinned host memory only (PyTorch after 2.11, pytorch/pytorch#182407):
# _record_memory_history(record_pinned_host_memory=True, record_cuda=False)
# leaves segments and device_traces empty and fills host_segments and
# host_traces in the layout of PyTorch's writer (THCPModule_memorySnapshot,
# torch/csrc/cuda/Module.cpp; CachingHostAllocatorImpl::getSegments and
# record_trace, aten/src/ATen/core/CachingHostAllocator.h): one segment of
# one block per pinned block (device -1, "small", requested_size 0 on the
# segment and the block's size on the block), every entry with the block's
# size, stream 0, pool_id (0, 0), empty compile_context and user_metadata,
# and frames only on alloc and free_requested. The pinned allocator rounds
# each block to a power of two: two 1 MiB pinned buffers (one live, one
# cached after its free) and a 4 KiB one.
HOST = 0x7E0000000000
HFRAMES = [{"filename": "/x/loader.py", "line": 88, "name": "pin_memory"},
           {"filename": "/x/train.py", "line": 40, "name": "<module>"}]


def host_seg(addr, size, state):
    return {"device": -1, "address": addr, "total_size": size,
            "allocated_size": size if state == "active_allocated" else 0,
            "active_size": size if state != "inactive" else 0,
            "requested_size": 0,
            "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": [],
            "blocks": [{"address": addr, "size": size, "requested_size": size,
                        "state": state, "frames": HFRAMES if state == "active_allocated" else []}]}


def host_ev(action, addr, size, t):
    e = {"action": action, "addr": addr, "size": size, "stream": 0,
         "time_us": t, "compile_context": "", "user_metadata": "", "pool_id": (0, 0)}
    if action in ("alloc", "free_requested"):
        e["frames"] = HFRAMES
    return e


d = {"segments": [], "device_traces": [[]],
     "allocator_settings": {"max_split_size": -1, "roundup_power2_divisions": {"1": 0}},
     "external_annotations": [],
     "host_segments": [host_seg(HOST, 1 << 20, "active_allocated"),
                       host_seg(HOST + (1 << 20), 1 << 20, "inactive"),
                       host_seg(HOST + (2 << 20), 4096, "active_allocated")],
     "host_traces": [host_ev("segment_alloc", HOST, 1 << 20, 2000),
                     host_ev("alloc", HOST, 1 << 20, 2001),
                     host_ev("segment_alloc", HOST + (1 << 20), 1 << 20, 2002),
                     host_ev("alloc", HOST + (1 << 20), 1 << 20, 2003),
                     host_ev("free_requested", HOST + (1 << 20), 1 << 20, 2004),
                     host_ev("free_completed", HOST + (1 << 20), 1 << 20, 2005),
                     host_ev("segment_alloc", HOST + (2 << 20), 4096, 2006),
                     host_ev("alloc", HOST + (2 << 20), 4096, 2007)]}
with open(SNAP + "host_memory.pickle", "wb") as f:
    pickle.dump(d, f, protocol=4)
