#!/usr/bin/env python3
"""Make the small hand-made monitoring fixtures in testdata/snapshots/ (no GPU, no PyTorch).

Run from the repository root:  python3 testdata/gen/monitorgen.py

monitor_small.stats.jsonl  12 memory_stats() records, one per step ("step", "time" = seconds
                           since the epoch, and the flat keys). The figures are those of the
                           real mlp_train.stats.json (PyTorch 2.11, H200), changed per step:
                           from step 6 on, 2 MiB more allocated per step (a leak), and a new
                           20 MiB segment reserved at steps 6 and 16 ... as the allocator
                           would; one cudaMalloc retry at step 9.
monitor_small.smi.csv      nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total
                           --format=csv -lms 100 for two GPUs, timestamps in UTC: GPU 0 uses
                           a 500 MiB context plus the reserved bytes of mlp_train.pickle's trace
                           at that time, plus 512 MiB taken outside PyTorch from step 4 on;
                           GPU 1 holds 3 MiB.
monitor_small.noheader.csv The same rows as --format=csv,noheader,nounits.
"""
import json
import time as _t

SNAP = "testdata/snapshots/"
MIB = 2**20
STEP_S = 0.4

# The logs are laid over the bundled real snapshot mlp_train.pickle: they start 0.16 s before its
# first trace entry, and GPU 0's memory.used follows the reserved bytes of its trace.
import pickle
with open(SNAP + "mlp_train.pickle", "rb") as f:
    snap = pickle.load(f)
trace = snap["device_traces"][0]
T0 = trace[0]["time_us"] // 1000000 + 0.0
events = []
for e in trace:
    if e["action"] == "segment_alloc":
        events.append((e["time_us"] / 1e6, e["size"]))
    elif e["action"] == "segment_free":
        events.append((e["time_us"] / 1e6, -e["size"]))


def trace_reserved(t):
    return sum(sz for (et, sz) in events if et <= t)

with open(SNAP + "mlp_train.stats.json") as f:
    base = json.load(f)


records = []
reserved_extra = 0
rows = []
for step in range(12):
    d = dict(base)
    leak = max(0, step - 5) * 2 * MIB
    if step >= 6:
        reserved_extra = 20 * MIB * (1 + (leak - 1) // (20 * MIB))
    for fam, extra in (("allocated_bytes", leak), ("active_bytes", leak), ("requested_bytes", leak),
                       ("reserved_bytes", reserved_extra)):
        for p in ("large_pool", "all"):
            k = f"{fam}.{p}."
            d[k + "current"] = base[k + "current"] + extra
            d[k + "peak"] = max(base[k + "peak"], d[k + "current"])
            d[k + "allocated"] = base[k + "allocated"] + extra
    if step >= 9:
        d["num_alloc_retries"] = 1
        d["num_sync_all_streams"] = 1
    t = T0 + step * STEP_S
    rec = {"step": step, "time": t}
    rec.update(d)
    records.append(rec)

with open(SNAP + "monitor_small.stats.jsonl", "w") as f:
    for r in records:
        f.write(json.dumps(r) + "\n")


def reserved_at(t):
    r = None
    for rec in records:
        if rec["time"] <= t:
            r = rec["reserved_bytes.all.current"]
    return r if r is not None else 0


header = "timestamp, index, memory.used [MiB], memory.total [MiB]\n"
with open(SNAP + "monitor_small.smi.csv", "w") as f, open(SNAP + "monitor_small.noheader.csv", "w") as g:
    f.write(header)
    for i in range(int(12 * STEP_S / 0.1) + 4):
        t = T0 - 0.15 + i * 0.1
        ms = int(round((t % 1) * 1000))
        stamp = _t.strftime("%Y/%m/%d %H:%M:%S", _t.gmtime(int(t))) + f".{ms:03d}"
        used0 = 500 + trace_reserved(t) // MIB + (512 if t >= T0 + 4 * STEP_S - 0.25 else 0)
        for gpu, used in ((0, used0), (1, 3)):
            f.write(f"{stamp}, {gpu}, {used} MiB, 143771 MiB\n")
            g.write(f"{stamp}, {gpu}, {used}, 143771\n")
