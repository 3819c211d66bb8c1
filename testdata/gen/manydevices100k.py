#!/usr/bin/env python3
"""Make testdata/snapshots/manydevices100k.pickle.xz: a snapshot listing 100,000
devices (issue 25: a file of 100,000 devices printed one warning per device,
27 MB of stderr from `leaks`).

Run from the repository root:  python3 testdata/gen/manydevices100k.py
(Python 3 standard library only; deterministic.)

- device_traces has 100,000 traces, each the same two entries (one alloc
  and one free_requested dict, memoised: BINGET per device), so the
  pickle is 800 KB raw and about 700 bytes xz-compressed;
- devices 0, 1 and 2 have one small-pool segment each whose 512-byte block
  is still active_allocated: the replay (which frees it on free_requested)
  differs from the file's segments on every device, and every device but
  those three has no segment at all, so every view has a per-device warning
  to give.
"""
import lzma
import pickle

OUT = "testdata/snapshots/manydevices100k.pickle.xz"
N = 100_000


def build():
    addr = 1 << 32
    alloc = {"action": "alloc", "addr": addr, "size": 512, "stream": 0, "time_us": 1, "frames": []}
    free = {"action": "free_requested", "addr": addr, "size": 512, "stream": 0, "time_us": 2, "frames": []}
    blocks = [{"size": 512, "requested_size": 512, "state": "active_allocated", "address": addr, "frames": []},
              {"size": (2 << 20) - 512, "requested_size": 0, "state": "inactive", "address": addr + 512, "frames": []}]
    segs = [{"device": d, "address": addr, "total_size": 2 << 20, "allocated_size": 512, "active_size": 512,
             "requested_size": 512, "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
             "is_expandable": False, "frames": [], "blocks": blocks} for d in range(3)]
    return {"segments": segs, "device_traces": [[alloc, free] for _ in range(N)]}


def main():
    raw = pickle.dumps(build(), protocol=4)
    with open(OUT, "wb") as f:
        f.write(lzma.compress(raw, format=lzma.FORMAT_XZ, preset=9))


if __name__ == "__main__":
    main()
