#!/usr/bin/env python3
"""Make testdata/snapshots/manydevices.pickle: ten device traces whose
entries the last trace references again, so that the decoder's memo holds
trace-entry handles of a ninth and tenth device list (snapshot/pickle.go:
only the first eight fit a 4-byte memo slot; the others go to the wide
table).

Run from the repository root:  python3 testdata/gen/manydevices.py
(Python 3 standard library only; deterministic.)

- devices 0 to 9 have 120 entries each (one APPENDS batch: the fast path
  reads them), frames shared by object across devices;
- device 9's trace then repeats entries of devices 0, 1, 7, 8 and 9 (the
  same dicts: BINGET of memoised entries), read by the generic machine.
"""
import pickle

SNAP = "testdata/snapshots/"


def build():
    frames = [{"filename": f"/src/m{i % 3}.py", "line": i, "name": f"f{i}"} for i in range(8)]
    traces = []
    for d in range(10):
        base = 0x7F0000000000 + d * 0x10000000
        tr = []
        for i in range(120):
            tr.append({"action": ("alloc", "free_requested", "free_completed")[i % 3],
                       "addr": base + (i // 3) * 0x200, "size": 512 * (1 + i % 5),
                       "stream": 0, "time_us": 1_700_000_000_000_000 + d * 1000 + i,
                       "frames": frames[i % 4:i % 4 + 1 + d % 3]})
        traces.append(tr)
    traces[9] += [traces[0][3], traces[1][4], traces[7][5], traces[8][6], traces[8][7], traces[9][8]]
    return {"segments": [], "device_traces": traces}


def main():
    with open(SNAP + "manydevices.pickle", "wb") as f:
        pickle.dump(build(), f, protocol=4)


if __name__ == "__main__":
    main()
