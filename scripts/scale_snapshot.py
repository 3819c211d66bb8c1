#!/usr/bin/env python3
"""Write copies of a memory snapshot with N trace entries, for scaling benchmarks.

    python3 scripts/scale_snapshot.py SNAPSHOT.pickle OUTDIR N [N ...]

writes OUTDIR/snapshot_<N>.pickle for each N (N may be written 500000 or
0.5M). Only the standard library is used.

Device 0's trace is shortened or lengthened as a recording with another
max_entries would have seen it, so that the allocator replay still ends
in the file's segments:

- fewer entries: the last N, as a smaller ring buffer would have kept;
- more entries: k copies of the trace one after another, each earlier
  copy shifted back in time by the trace's span (plus a second) and up in
  address by a multiple of the device's address span, followed by the
  original; then the last N entries of that. The segments of each shifted
  copy are added as well: a copy's allocations never touch another copy's
  addresses, so each ends in its own segments. Current figures grow with
  k, as if k independent models shared the GPU.

Entries are new dicts with new frame lists (as torch writes them); frame
dicts and strings are shared, as in the file torch writes. The pickle
protocol is the input's.
"""

import math
import os
import pickle
import sys
import time


def parse_count(s):
    s = s.strip().upper()
    if s.endswith("M"):
        return int(float(s[:-1]) * 1_000_000)
    if s.endswith("K"):
        return int(float(s[:-1]) * 1_000)
    return int(s)


def shifted_frames(frames, memo):
    """A new list for each distinct frames list, sharing its frame dicts."""
    if frames is None:
        return None
    key = id(frames)
    out = memo.get(key)
    if out is None:
        out = list(frames)
        memo[key] = out
    return out


def shifted_entry(e, dt, da, memo):
    c = dict(e)
    if "time_us" in e:
        c["time_us"] = e["time_us"] + dt
    # oom entries keep device_free in "addr"; leave it as it is.
    if e.get("action") != "oom" and "addr" in e:
        c["addr"] = e["addr"] + da
    if "frames" in e:
        c["frames"] = shifted_frames(e["frames"], memo)
    return c


def shifted_segment(s, da):
    c = dict(s)
    c["address"] = s["address"] + da
    c["blocks"] = [dict(b, address=b["address"] + da) for b in s.get("blocks", [])]
    return c


def scale(snap, n, device=0):
    trace = snap["device_traces"][device]
    if not trace:
        raise SystemExit("device %d has no trace" % device)
    out = dict(snap)
    traces = list(snap["device_traces"])
    if n <= len(trace):
        traces[device] = trace[len(trace) - n:]
        out["device_traces"] = traces
        return out

    segs = [s for s in snap["segments"] if s.get("device", 0) == device]
    lo = min([e["addr"] for e in trace if e.get("action") != "oom"] + [s["address"] for s in segs])
    hi = max([e["addr"] + e.get("size", 0) for e in trace if e.get("action") != "oom"] +
             [s["address"] + s["total_size"] for s in segs])
    gib = 1 << 30
    da = (hi - lo + gib - 1) // gib * gib  # keeps the addresses' alignment
    times = [e["time_us"] for e in trace if "time_us" in e]
    t0, t1 = (min(times), max(times)) if times else (0, -1)
    dt = t1 - t0 + 1_000_000 if times else 0
    k = math.ceil(n / len(trace))

    entries = []
    segments = list(snap["segments"])
    annotations = list(snap.get("external_annotations", []))
    window = [a for a in annotations if t0 <= a.get("time_us", 0) <= t1]
    for c in range(k - 1, 0, -1):
        memo = {}
        entries.extend(shifted_entry(e, -c * dt, c * da, memo) for e in trace)
        segments.extend(shifted_segment(s, c * da) for s in segs)
        annotations.extend(dict(a, time_us=a["time_us"] - c * dt) for a in window)
    entries.extend(trace)
    traces[device] = entries[len(entries) - n:]
    out["device_traces"] = traces
    out["segments"] = segments
    if "external_annotations" in snap:
        annotations.sort(key=lambda a: a.get("time_us", 0))
        out["external_annotations"] = annotations
    return out


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__.strip().split("\n\n")[1])
    src, outdir, counts = argv[1], argv[2], [parse_count(a) for a in argv[3:]]
    with open(src, "rb") as f:
        head = f.read(2)
        f.seek(0)
        protocol = head[1] if head[:1] == b"\x80" else 4
        t = time.time()
        snap = pickle.load(f)
    if not isinstance(snap, dict) or "device_traces" not in snap:
        raise SystemExit("%s: not a _dump_snapshot() dict" % src)
    print("loaded %s in %.1f s: %d trace entries" % (src, time.time() - t, len(snap["device_traces"][0])), file=sys.stderr)
    os.makedirs(outdir, exist_ok=True)
    for n in counts:
        t = time.time()
        path = os.path.join(outdir, "snapshot_%d.pickle" % n)
        with open(path, "wb") as f:
            pickle.dump(scale(snap, n), f, protocol=protocol)
        print("wrote %s (%d entries, %.1f MB) in %.1f s" % (path, n, os.path.getsize(path) / 1e6, time.time() - t), file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv)
