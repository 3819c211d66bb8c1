#!/usr/bin/env python3
"""Build the inputs of the cost sweeps (issue 28): one file per input
dimension, at a scale the caller picks, so that a test can run a command at
1x, 4x and 16x and compare the work.

    python3 testdata/gen/sweep.py KIND SCALE OUT

Never commit what it writes: cmd/snapview/sweep_test.go runs it at test time.
Python 3 standard library only; deterministic. The kinds (N grows with SCALE):

  digits     trace entries, a block and allocator settings whose integers
             are N bytes wide (pickle LONG4): size, addr, time_us,
             max_split_size
  memo       a trace padded with N bytes of values memoized (MEMOIZE,
             LONG_BINPUT) and popped: empty lists and dicts, tuples, bytes,
             floats (only the memo keeps them alive)
  line       a log of N bytes with no line break (for stats, smi and the
             memory_stats reader): OUT is written as is
  key        an allocator_settings key of N characters with no space
  frame      64 allocations, each its own stack with a frame whose file
             name is N characters and whose function name N/2
  devices    N device traces, all empty but the first (a consistent
             trace and segment on device 0)
  twins      N devices with the same trace and segment (a consistent
             one, as device 0 of devices), memoized: each device the
             same 13 entries, 2 MiB segment and 7 blocks
  pairs      allocator_settings with N key/value pairs
  gpus       an nvidia-smi CSV log of N GPUs, two samples each
  action     2000 trace entries, one of an unknown action whose name is N
             characters (with an escape sequence)
"""
import io
import pickle
import struct
import sys


def op_str(s):
    b = s.encode()
    if len(b) < 256:
        return b"\x8c" + bytes([len(b)]) + b
    return b"X" + struct.pack("<I", len(b)) + b


BASE = 0x7F0000000000


def entries(n, frames=None):
    out = []
    for i in range(n):
        out.append({"action": "alloc", "addr": BASE + 512 * i, "size": 512, "stream": 0,
                    "time_us": 1_700_000_000_000_000 + i, "frames": frames or []})
    return out


def snap(traces, segments=(), settings=None):
    d = {"segments": list(segments), "device_traces": traces}
    if settings is not None:
        d["allocator_settings"] = settings
    return pickle.dumps(d, protocol=4)


def digits(scale):
    n = (64 << 10) * scale  # bytes per integer
    wide = (1 << (8 * n - 9)) + 12345
    tr = entries(8)
    tr[1]["size"] = wide
    tr[2]["addr"] = wide
    tr[3]["time_us"] = -wide
    seg = {"device": 0, "address": BASE, "total_size": 2 << 20, "allocated_size": 0, "active_size": 0,
           "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
           "is_expandable": False, "frames": [],
           "blocks": [{"address": BASE, "size": wide, "requested_size": 0, "state": "inactive", "frames": []}]}
    return snap([tr], [seg], {"max_split_size": wide, "garbage_collection_threshold": 0.0})


def memo(scale):
    n = (1 << 20) * scale  # bytes of padding
    out = io.BytesIO()
    out.write(b"\x80\x04}(" + op_str("segments") + b"]" + op_str("device_traces") + b"](]")
    body = pickle.dumps(entries(1)[0], protocol=4)[2:-1]
    if body[:1] == b"\x95":
        body = body[9:]
    # Values memoized (MEMOIZE, or LONG_BINPUT at a fresh index) and
    # popped: an empty list, an empty dict, a tuple, a bytes value, a
    # float. Only the memo keeps them alive.
    unit = (b"]\x940" + b"}\x940" + b"K\x01\x85\x940" + b"C\x01x\x940"
            + b"G\x00\x00\x00\x00\x00\x00\x00\x01\x940")
    rounds = n // (len(unit) + 6)
    for i in range(rounds):
        out.write(unit + b"]r" + struct.pack("<I", 1 + i) + b"0")
    out.write(body + b"aeu.")
    return out.getvalue()


def line(scale):
    n = (1 << 20) * scale
    return b'{"allocated_bytes.all.current": ' + b"1" * (n - 34) + b"\x00"


def key(scale):
    n = (64 << 10) * scale
    return snap([entries(4)], settings={"k" * n: 1, "max_split_size": -1})


def consistent(n_alloc, n_free, frames, device=0):
    """A trace and a segment that agree: one 2 MiB segment, n_alloc
    allocations of 512 bytes, the first n_free freed."""
    t0 = 1_700_000_000_000_000
    tr = [{"action": "segment_alloc", "addr": BASE, "size": 2 << 20, "stream": 0, "time_us": t0, "frames": frames}]
    for i in range(n_alloc):
        tr.append({"action": "alloc", "addr": BASE + 512 * i, "size": 512, "stream": 0,
                   "time_us": t0 + 1 + i, "frames": frames})
    for i in range(n_free):
        for a in ("free_requested", "free_completed"):
            tr.append({"action": a, "addr": BASE + 512 * i, "size": 512, "stream": 0,
                       "time_us": t0 + 1000 + i, "frames": frames})
    live = [{"address": BASE + 512 * i, "size": 512, "requested_size": 512, "state": "active_allocated",
             "frames": frames} for i in range(n_free, n_alloc)]
    blocks = [{"address": BASE, "size": 512 * n_free, "requested_size": 0, "state": "inactive", "frames": []}] + live
    blocks.append({"address": BASE + 512 * n_alloc, "size": (2 << 20) - 512 * n_alloc, "requested_size": 0,
                   "state": "inactive", "frames": []})
    seg = {"device": device, "address": BASE, "total_size": 2 << 20, "allocated_size": 512 * (n_alloc - n_free),
           "active_size": 512 * (n_alloc - n_free), "requested_size": 512 * (n_alloc - n_free), "stream": 0,
           "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
           "blocks": blocks}
    return tr, seg


def frame(scale):
    n = (4 << 10) * scale
    tr, seg = consistent(64, 32, [])
    # Each allocation its own stack: a frame whose file name is n
    # characters (distinct per stack) under a shared one.
    for e in tr[1:]:
        i = (e["addr"] - BASE) // 512
        e["frames"] = [{"filename": "/x%d" % i + "/x" * (n // 2) + "/model.py", "line": 7,
                        "name": "forward" + "<" * (n // 4)},
                       {"filename": "/src/train.py", "line": 3, "name": "step"}]
    for b in seg["blocks"]:
        if b["state"] == "active_allocated":
            b["frames"] = tr[1 + (b["address"] - BASE) // 512]["frames"]
    return snap([tr], [seg])


def devices(scale):
    n = 16_000 * scale
    tr, seg = consistent(8, 4, [{"filename": "/src/train.py", "line": 3, "name": "step"}])
    return snap([tr] + [[] for _ in range(n - 1)], [seg])


def twins(scale):
    n = 2_000 * scale
    tr, seg = consistent(8, 4, [{"filename": "/src/train.py", "line": 3, "name": "step"}])
    return snap([tr] * n, [dict(seg, device=d) for d in range(n)])


def pairs(scale):
    n = 20_000 * scale
    st = {"k%d" % i: i for i in range(n)}
    st["max_split_size"] = -1
    return snap([entries(4)], settings=st)


def action(scale):
    n = (16 << 10) * scale
    tr = entries(2000)
    tr[1]["action"] = "x\x1b[31m" + "y" * n
    return snap([tr])


def gpus(scale):
    n = 2_000 * scale
    lines = ["timestamp, index, memory.used [MiB], memory.total [MiB]"]
    for t in range(2):
        for i in range(n):
            lines.append("2026/01/01 00:00:%02d.000, %d, %d MiB, 81559 MiB" % (t, i, 1000 + i % 7 + t))
    return ("\n".join(lines) + "\n").encode()


KINDS = {"digits": digits, "memo": memo, "line": line, "key": key, "frame": frame,
         "devices": devices, "twins": twins, "pairs": pairs, "action": action, "gpus": gpus}


def main():
    kind, scale, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(out, "wb") as f:
        f.write(KINDS[kind](scale))


if __name__ == "__main__":
    main()
