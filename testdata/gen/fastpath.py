#!/usr/bin/env python3
"""Make testdata/snapshots/fastpath.proto{2,4}.pickle: trace shapes at the
edges of the decoder's fast path for trace entries (snapshot/pickle_fast.go).

Run from the repository root:  python3 testdata/gen/fastpath.py
(Python 3 standard library only; deterministic.)

What is in it, so that the fast path, its give-ups and the generic machine
are all exercised on one file (snapshot/fastpath_test.go):
- two devices, 6000 and 5001 entries (APPENDS batches of 1000);
- frame lists shared by object between the segments' blocks and trace
  entries (memoised before the trace, converted inside it), and frame
  dicts shared the same way inside new frame lists;
- stacks of 0, 1 (APPEND), 3 and 1500 frames (two MARK...APPENDS groups),
  frames with fx_node_* keys and None names, a filename over 255 bytes
  (BINUNICODE);
- an oom entry with device_free, compile_context and user_metadata strings,
  int widths from BININT1 to 8-byte LONG1, negative sizes;
- batches the fast path gives up on: an unknown entry key, an unknown
  action, the same entry dict twice in a batch, frames None, a 9-byte int.
Protocol 4 has FRAME opcodes between entries; protocol 2 uses BINPUT.
fastpath.small.pickle (150 and 120 entries, device 1's batch spoilt) is a seed
for FuzzDecode.
"""
import pickle

SNAP = "testdata/snapshots/"


def frame(i):
    return {"filename": f"/src/model_{i % 7}.py", "line": 10 + i, "name": f"fn_{i % 11}"}


def build(sizes=((0, 6000), (1, 5000))):
    shared_frames = [frame(i) for i in range(40)]
    shared_frames[3] = {"filename": "/src/fx.py", "line": 3, "name": None,
                        "fx_node_op": "call_function", "fx_node_name": "add_1"}
    long_name = {"filename": "/very/" + "long/" * 60 + "path.py", "line": 1, "name": "deep"}
    block_stacks = [shared_frames[i:i + 3] for i in range(0, 30, 3)]
    segments = []
    for d in range(2):
        base = 0x7F0000000000 + d * 0x10000000
        blocks = []
        for j, st in enumerate(block_stacks):
            blocks.append({"address": base + j * 0x100000, "size": 0x100000,
                           "requested_size": 0x100000 - j, "state": "active_allocated",
                           "frames": st})
        segments.append({"device": d, "address": base, "total_size": 0x100000 * len(blocks),
                         "allocated_size": 0x100000 * len(blocks), "active_size": 0x100000 * len(blocks),
                         "requested_size": sum(b["requested_size"] for b in blocks),
                         "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                         "is_expandable": False, "frames": [], "blocks": blocks})
    long_stack = [frame(i) for i in range(1500)]
    traces = []
    for d, n in sizes:
        tr = []
        base = 0x7F0000000000 + d * 0x10000000
        for i in range(n):
            k = i % 13
            if k == 0:
                fr = block_stacks[i % len(block_stacks)]  # shared with a block
            elif k == 1:
                fr = []
            elif k == 2:
                fr = [shared_frames[i % 40]]  # one frame: APPEND
            elif k == 3:
                fr = [long_name, shared_frames[5], frame(1000 + i)]
            elif k == 4 and i % 500 == 4 and n > 1000:
                fr = long_stack
            else:
                fr = [shared_frames[(i + j) % 40] for j in range(k)]
            e = {"action": ("alloc", "free_requested", "free_completed")[i % 3],
                 "addr": base + (i % 10) * 0x100000, "size": (i * 512) % 70000,
                 "stream": 0 if i % 5 else 0x5555AAAA5555, "time_us": 1_700_000_000_000_000 + i,
                 "frames": fr, "compile_context": "N/A" if i % 7 else f"ctx {i % 3}",
                 "user_metadata": "" if i % 11 else "meta"}
            if i == 17:
                e["size"] = -5
            if (d == 0 and i == 1100) or (d == 1 and n < 1000 and i == 60):  # batch 2; the small one's device 1
                e["requested_size"] = 3
            if d == 0 and i == 3100:  # batch 4
                e["action"] = "future_action"
            if d == 1 and i == 300:  # batch 1
                e["frames"] = None
            if d == 1 and i == 4200:  # batch 5
                e["size"] = 2**64 - 1  # 9-byte LONG1
            if i == 40:
                e = {"action": "oom", "device_free": 12345, "size": 1 << 30, "stream": 0,
                     "time_us": 1_700_000_000_000_000 + i, "frames": fr}
            tr.append(e)
        if d == 1 and n > 2700:
            tr.insert(2700, tr[2690])  # the same dict twice in batch 3
        traces.append(tr)
    return {"segments": segments, "device_traces": traces,
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1}}


def main():
    snap = build()
    for proto in (2, 4):
        with open(SNAP + f"fastpath.proto{proto}.pickle", "wb") as f:
            pickle.dump(snap, f, protocol=proto)
    # A small one (under 64 KB) that FuzzDecode takes as a seed.
    with open(SNAP + "fastpath.small.pickle", "wb") as f:
        pickle.dump(build(((0, 150), (1, 120))), f, protocol=4)


if __name__ == "__main__":
    main()
